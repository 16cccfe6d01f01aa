package hunt

import (
	"math"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Reproducer is the one-line rdmabench command that runs the finding's configuration
// against server ("SERVER" when empty; several, comma-separated, as Plan.Server: a
// fan-out names the first k, one server the first): every parameter of the point, and
// the plan's common settings that differ from the CLI's defaults (duration or
// iterations, warm-up, hugepages, completion events, counters).
func (f Finding) Reproducer(server string) string { return Reproducer(f.ReproConfig, server) }

// Perftest is the perftest command line (ib_write_bw, ib_read_bw) for the finding's
// configuration against server, or "" where perftest cannot express it.
func (f Finding) Perftest(server string) string { return Perftest(f.ReproConfig, server) }

// serversFor is the server words of c's command line: server's last word is the plan's
// servers, comma-separated (SERVER a,b,c; the words before it are flags that go with it,
// "-d mlx5_0 -x 3"); a run of one server names the first, a fan-out of k (c.Peers) the
// first k. Empty: SERVER, or SERVER1,SERVER2,... for a fan-out; a list shorter than k
// is filled so.
func serversFor(c result.Config, server string) string {
	flags, list := "", strings.TrimSpace(server)
	if i := strings.LastIndexByte(list, ' '); i >= 0 {
		flags, list = list[:i+1], list[i+1:]
	}
	var all []string
	if list != "" {
		all = strings.Split(list, ",")
	}
	k := max(c.Peers, 1)
	if k == 1 {
		if len(all) == 0 {
			return flags + "SERVER"
		}
		return flags + all[0]
	}
	out := all[:min(k, len(all))]
	for i := len(out); i < k; i++ {
		out = append(out, "SERVER"+itoa(i+1))
	}
	return flags + strings.Join(out, ",")
}

// Reproducer is the rdmabench command line of a bandwidth config c (Finding.Reproducer).
func Reproducer(c result.Config, server string) string {
	a := []string{"rdmabench", c.Op, "bw", "-s", result.FormatSize(c.MsgSizeBytes), "-t", itoa(c.SQDepth),
		"-l", itoa(c.PostList), "-Q", itoa(c.CQMod), "-q", itoa(max(c.NumQPs, 1))}
	if c.BufOffsetBytes != 0 {
		a = append(a, "--offset", itoa(c.BufOffsetBytes))
	}
	if c.MTUBytes != 0 {
		a = append(a, "-m", itoa(c.MTUBytes))
	}
	if c.QPTimeout != 0 {
		a = append(a, "-u", itoa(c.QPTimeout))
	}
	if c.MR != "" && c.MR != MRPool {
		a = append(a, "--mr", c.MR)
		if c.MR == MRCache && c.MRCache != max(plan.DefaultMRCache, c.SQDepth) {
			a = append(a, "--mr-cache", itoa(c.MRCache))
		}
	}
	if c.Bidirectional {
		a = append(a, "-b")
	}
	a = append(a, common(c, false)...)
	if c.InlineBytes > 0 {
		a = append(a, "-I", itoa(c.InlineBytes))
	}
	if c.OutsNum > 0 {
		a = append(a, "-o", itoa(c.OutsNum))
	}
	if c.PostAPI != "" && c.PostAPI != "auto" {
		a = append(a, "--post-api", c.PostAPI)
	}
	if c.CQModerationCount > 0 {
		a = append(a, "--cq-moderation", itoa(c.CQModerationCount))
	}
	if c.CQModerationUS > 0 {
		a = append(a, "--cq-moderation-usec", itoa(c.CQModerationUS))
	}
	if c.WarmupIterations > 0 {
		a = append(a, "--warmup", strconv.FormatUint(c.WarmupIterations, 10))
	}
	if c.Counters != "" && c.Counters != "auto" {
		a = append(a, "--counters", shellWord(c.Counters))
	}
	return strings.Join(append(a, serversFor(c, server)), " ")
}

// common are the flags both command lines share: the run's length, hugepages,
// completion events and the traffic class.
func common(c result.Config, perftest bool) []string {
	var a []string
	switch {
	case c.DurationS > 0 && perftest:
		// perftest's -D is a whole number of seconds, 1 or more (CHECK_VALUE_POSITIVE of
		// an int): it cannot run shorter than 1 s, nor a fraction, so it runs the next
		// whole second up. Its throughput is a rate, comparable all the same.
		a = append(a, "-D", strconv.FormatInt(int64(max(1, math.Ceil(c.DurationS))), 10))
	case c.DurationS > 0:
		a = append(a, "-D", strconv.FormatFloat(c.DurationS, 'g', -1, 64))
	case c.Iterations > 0:
		a = append(a, "-n", strconv.FormatUint(c.Iterations, 10))
	}
	if c.Hugepages {
		a = append(a, map[bool]string{false: "--hugepages", true: "--use_hugepages"}[perftest])
	}
	if c.CompletionEvents {
		a = append(a, "-e")
	}
	if c.TrafficClass != 0 {
		a = append(a, "--tclass", itoa(c.TrafficClass))
	}
	return a
}

// Perftest is the perftest command line of a bandwidth config c, or "" where perftest
// cannot express it: --mr per-io or cache, a buffer offset, several servers, --verify,
// --baseline, completion-event moderation (perftest has no such flags); a post list
// longer than 1 that is not a multiple of the moderation, or an iteration count that is
// not a multiple of the post list (perftest refuses those; rdmabench runs them);
// completion events with a duration (perftest: "Duration mode doesn't work with
// events"). A duration that is not a whole number of seconds is rounded up (-D takes
// whole seconds, 1 or more). -D and these rules are as in perftest 4.5 to 6.x.
func Perftest(c result.Config, server string) string {
	switch {
	case c.Op != "write" && c.Op != "read",
		c.MR != "" && c.MR != MRPool, c.BufOffsetBytes != 0, c.Peers > 0, c.Verify, c.Baseline != "",
		c.CQModerationCount > 0 || c.CQModerationUS > 0,
		c.PostList > 1 && c.CQMod > 0 && c.PostList%c.CQMod != 0,
		c.DurationS == 0 && c.PostList > 1 && c.Iterations%uint64(c.PostList) != 0,
		c.DurationS > 0 && c.CompletionEvents:
		return ""
	}
	a := []string{"ib_" + c.Op + "_bw", "-s", itoa(c.MsgSizeBytes), "-t", itoa(c.SQDepth), "-l", itoa(c.PostList),
		"-Q", itoa(c.CQMod), "-q", itoa(max(c.NumQPs, 1))}
	if c.MTUBytes != 0 {
		a = append(a, "-m", itoa(c.MTUBytes))
	}
	if c.QPTimeout != 0 {
		a = append(a, "-u", itoa(c.QPTimeout))
	}
	if c.Bidirectional {
		a = append(a, "-b")
	}
	a = append(a, common(c, true)...)
	if c.InlineBytes > 0 {
		a = append(a, "-I", itoa(c.InlineBytes))
	}
	if c.OutsNum > 0 {
		a = append(a, "-o", itoa(c.OutsNum))
	}
	if c.PostAPI == "legacy" {
		a = append(a, "--use_old_post_send")
	}
	a = append(a, "--report_gbits")
	return strings.Join(append(a, serversFor(c, server)), " ")
}

func itoa(v int) string { return strconv.Itoa(v) }

// shellWord quotes s for a shell where it holds anything but a name's characters.
func shellWord(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == ',' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
