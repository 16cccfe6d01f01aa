package qp

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		nqp, threads int
		want         []Block
	}{
		{1, 1, []Block{{0, 1}}},
		{4, 2, []Block{{0, 2}, {2, 2}}},
		{5, 2, []Block{{0, 3}, {3, 2}}},
		{7, 3, []Block{{0, 3}, {3, 2}, {5, 2}}},
		{3, 3, []Block{{0, 1}, {1, 1}, {2, 1}}},
	} {
		got, err := Split(c.nqp, c.threads)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%d, %d) = %v, %v; want %v", c.nqp, c.threads, got, err, c.want)
		}
		// Every QP exactly once, in order.
		var all []int
		for _, b := range got {
			all = append(all, b.QPs()...)
		}
		for i, q := range all {
			if q != i || len(all) != c.nqp {
				t.Errorf("Split(%d, %d): QPs %v", c.nqp, c.threads, all)
				break
			}
		}
	}
	for _, c := range [][2]int{{1, 2}, {4, 0}, {0, 1}} {
		if _, err := Split(c[0], c[1]); err == nil {
			t.Errorf("Split(%d, %d) accepted", c[0], c[1])
		}
	}
}

func TestWindow(t *testing.T) {
	s, e := Window([]Span{{100, 500}, {0, 0}, {50, 300}, {200, 900}})
	if s != 50 || e != 900 {
		t.Fatalf("window %d..%d", s, e)
	}
	if s, e := Window([]Span{{0, 0}}); s != 0 || e != 0 {
		t.Fatalf("nothing posted: %d..%d", s, e)
	}
}

func TestCPUSets(t *testing.T) {
	if got := CPUSets(nil, 2, true); got[0] != nil || got[1] != nil {
		t.Fatalf("unpinned: %v", got)
	}
	if got := CPUSets([]int{2, 3, 4}, 2, true); !reflect.DeepEqual(got, [][]int{{2}, {3}}) {
		t.Fatalf("split: %v", got)
	}
	if got := CPUSets([]int{1}, 2, true); !reflect.DeepEqual(got, [][]int{{1}, {1}}) {
		t.Fatalf("too few to split: %v", got)
	}
	if got := CPUSets([]int{2, 3, 4}, 2, false); !reflect.DeepEqual(got, [][]int{{2, 3, 4}, {2, 3, 4}}) {
		t.Fatalf("shared: %v", got)
	}
}

func TestCPUList(t *testing.T) {
	got, err := ParseCPUList(" 8,0-3,2,10-11")
	if err != nil || !reflect.DeepEqual(got, []int{0, 1, 2, 3, 8, 10, 11}) {
		t.Fatalf("%v %v", got, err)
	}
	if s := FormatCPUList(got); s != "0-3,8,10-11" {
		t.Fatalf("format %q", s)
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1,,2", "1-"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
