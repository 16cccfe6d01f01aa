// Package pairs holds a fleet's rules that need no network: the pairs and rounds of a
// schedule, the outlier rules that judge each pair against the fleet's median, the
// retests, and the host x host matrix. The coordinator (package fleet) judges with them
// while it runs; the readers (report matrix, report html) judge a results file with the
// same rules, without the coordinator's dependencies.
package pairs
