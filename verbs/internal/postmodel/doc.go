// Package postmodel tests verbs/rb_post.c, the data path of package rdma (post lists
// and completion arrays in C memory), against a model of the verbs it calls (model.h),
// without an RDMA device. It needs cgo on Linux and libibverbs' headers, not the
// library.
package postmodel
