//go:build linux && cgo

package qmodel

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// The extended QP API (--post-api wr) is the same loops with another post: every WR
// chain goes out as one batch between ibv_wr_start and ibv_wr_complete. Two checks:
// each test of this package passes again with every run on that path
// (TestEveryTestOnTheWRAPI), and the path posts exactly what ibv_post_send posts, in the
// same number of doorbells, with the same samples (TestWRAPIPostsLikeLegacy).

// TestEveryTestOnTheWRAPI runs this package's tests again in a child process whose
// model runs post through the extended QP API (RB_QMODEL_WR_API=1).
func TestEveryTestOnTheWRAPI(t *testing.T) {
	if os.Getenv(wrAPIEnv) == "1" {
		t.Skip("this process already runs on the extended QP API")
	}
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.skip", "^TestEveryTestOnTheWRAPI$")
	if testing.Short() {
		cmd.Args = append(cmd.Args, "-test.short")
	}
	cmd.Env = append(os.Environ(), wrAPIEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Fatalf("the model's tests on the extended QP API: %v\n%s", err, strings.Join(lines[max(0, len(lines)-60):], "\n"))
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child run printed no PASS:\n%s", out)
	}
}

// TestWRAPIActive proves the switch: on the extended QP API (the child of
// TestEveryTestOnTheWRAPI, or Net.WRAPI) every post is a batch of ibv_wr_complete's,
// otherwise none is.
func TestWRAPIActive(t *testing.T) {
	c := BWCase{QPs: 2, Depth: 8, PostList: 4, CQMod: 2, Iters: 100, Net: Net{PerPoll: 3}}
	o := RunBW(c)
	want := uint64(0)
	if os.Getenv(wrAPIEnv) == "1" {
		want = o.Posts
	}
	if bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation); len(bad) > 0 || o.Posts == 0 || o.WRBatches != want {
		t.Fatalf("%v: %d posts, %d of them ibv_wr_complete batches, want %d; %v", c, o.Posts, o.WRBatches, want, bad)
	}
}

// TestWRAPIPostsLikeLegacy runs each bandwidth case on both paths: the extended API must
// post the same WRs to the same addresses in the same number of doorbells (one batch
// per chain: a post per WR would show as more), see the same completions, and give
// the loop the same samples, to the tick, on the model's deterministic clock.
func TestWRAPIPostsLikeLegacy(t *testing.T) {
	if os.Getenv(wrAPIEnv) == "1" {
		t.Skip("compares the two paths: needs the legacy one")
	}
	n := 0
	for _, sp := range []struct {
		name string
		net  Net
	}{{"1/poll", Net{PerPoll: 1}}, {"random", Net{PerPoll: 4, Random: true, Seed: 7}}, {"on-post", Net{OnPost: 1 << 20}}, {"post-cost", Net{PerPoll: 2, PostNS: 90, AckDelay: 3}}} {
		for _, qps := range []int{1, 3} {
			for _, depth := range []int{4, 16} {
				for _, pl := range []int{1, 3, 8} {
					for _, mod := range []int{1, 4} {
						for _, kind := range []string{"write", "write-inline", "read"} {
							if pl > depth || mod > depth {
								continue
							}
							c := BWCase{QPs: qps, Depth: depth, PostList: pl, CQMod: mod, Iters: 97, Read: kind == "read", Net: sp.net, TimeoutNS: 1e12}
							c.Inline = kind == "write-inline"
							legacy := RunBW(c)
							c.WRAPI = true
							wr := RunBW(c)
							n++
							at := fmt.Sprintf("%s %s %v", sp.name, kind, c)
							for name, o := range map[string]BWOutcome{"legacy": legacy, "wr": wr} {
								if bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation); len(bad) > 0 {
									t.Fatalf("%s on the %s path: %v", at, name, bad)
								}
							}
							switch {
							case legacy.WRBatches != 0 || wr.WRBatches != wr.Posts:
								t.Fatalf("%s: legacy posted %d batches, wr %d of its %d posts", at, legacy.WRBatches, wr.WRBatches, wr.Posts)
							case wr.Posts != legacy.Posts:
								t.Fatalf("%s: %d doorbells on the wr path, %d with ibv_post_send", at, wr.Posts, legacy.Posts)
							case !reflect.DeepEqual(wr.Addrs, legacy.Addrs) || !reflect.DeepEqual(wr.Done, legacy.Done):
								t.Fatalf("%s: the paths moved different WRs (done %v vs %v)", at, wr.Done, legacy.Done)
							case wr.Hist != legacy.Hist || wr.ModelLat != legacy.ModelLat || wr.DurationNS != legacy.DurationNS:
								t.Fatalf("%s: samples differ: wr %+v %+v %d, legacy %+v %+v %d", at, wr.Hist, wr.ModelLat, wr.DurationNS, legacy.Hist, legacy.ModelLat, legacy.DurationNS)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases alike on both paths", n)
}
