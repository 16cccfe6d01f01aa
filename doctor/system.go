package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/internal/memlock"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// memlockMargin is added to what a default test registers: the provider pins more than
// the buffer and the queue entries bench counts (doorbell records, UAR pages, ring
// rounding on hardware NICs), and each registration pins whole pages.
const memlockMargin = 1 << 20

// MemlockNeed is the locked memory a default `write bw` needs on either host: the
// larger of the client's registration (its source buffer and queues) and the server's
// (bench.ServerBytes: its destination buffer and queues), rounded up to pages, plus
// memlockMargin.
func MemlockNeed() uint64 {
	cfg := result.Config{Op: "write", Test: result.BW}
	write.Op.Defaults(&cfg)
	cfg.InlineBytes = 0 // perftest's and rdmabench's default for bandwidth tests
	server := bench.ServerBytes(write.Op, cfg)
	client := bench.ClientBytes(write.Op, cfg)
	n := uint64(max(server, client, int64(bench.SourceBytes(cfg)), int64(bench.DestBytes(cfg))))
	return (n+4095)/4096*4096 + memlockMargin
}

func limitText(v uint64) string {
	if v == memlock.Unlimited {
		return "unlimited"
	}
	return bytesText(v)
}

// memlockCheck: the locked-memory limit against what a default write bw registers.
func memlockCheck(root string) Check {
	c := Check{Name: "memlock"}
	soft, hard, err := memlock.Limit(root)
	if err != nil {
		c.Verdict, c.Found = Skip, "cannot read the locked-memory limit: "+err.Error()
		return c
	}
	need := MemlockNeed()
	limits := fmt.Sprintf("locked-memory limit (ulimit -l) %s, hard %s", limitText(soft), limitText(hard))
	switch {
	case soft >= need:
		c.Verdict, c.Found = OK, fmt.Sprintf("%s: enough for a default write bw (%s with a margin); larger --size, --qps or --tx-depth need more", limits, bytesText(need))
	case memlock.CapIPCLock(root):
		c.Verdict, c.Found = OK, fmt.Sprintf("%s, below the %s a default write bw registers, but this process has CAP_IPC_LOCK (root), which lifts the limit; as another user it would fail", limits, bytesText(need))
	default:
		c.Verdict = Fail
		c.Found = fmt.Sprintf("%s, below the %s a default write bw registers (buffer and queues, with a margin): memory registration fails with ENOMEM", limits, bytesText(need))
		c.Fix = "ulimit -l unlimited in the shell that runs rdmabench"
		if hard < need {
			c.Fix += " (the hard limit stops that: add '* - memlock unlimited' to /etc/security/limits.conf and log in again)"
		}
		c.Fix += "; for a systemd service, LimitMEMLOCK=infinity; for a container, --ulimit memlock=-1"
	}
	return c
}

// hugepagesCheck: hugepages reserved for --hugepages (never needed otherwise, so a
// warning at most).
func hugepagesCheck(root string) Check {
	c := Check{Name: "hugepages"}
	b, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		c.Verdict, c.Found = Skip, "cannot read /proc/meminfo: "+err.Error()
		return c
	}
	m := map[string]uint64{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
				m[k] = n
			}
		}
	}
	total, free, rsvd, sizeKB := m["HugePages_Total"], m["HugePages_Free"], m["HugePages_Rsvd"], m["Hugepagesize"]
	avail := free - min(free, rsvd)
	fix := "sudo sysctl -w vm.nr_hugepages=64 (persist it in /etc/sysctl.d/); only --hugepages needs them"
	switch {
	case sizeKB != 0 && sizeKB != 2048:
		c.Verdict = Warn
		c.Found = fmt.Sprintf("the default hugepage size is %s; --hugepages sizes buffers for 2 MiB pages", bytesText(sizeKB<<10))
		c.Fix = "boot with default_hugepagesz=2M hugepages=64 to use --hugepages"
	case total == 0:
		c.Verdict = Warn
		c.Found = "no hugepages reserved (HugePages_Total 0): --hugepages runs would fail; other tests do not need them"
		c.Fix = fix
	case avail == 0:
		c.Verdict = Warn
		c.Found = fmt.Sprintf("all %d hugepages are in use or reserved: --hugepages runs would fail", total)
		c.Fix = fix
	default:
		c.Verdict = OK
		c.Found = fmt.Sprintf("%d of %d %s hugepages free for --hugepages (a default test takes 1 per side)", avail, total, bytesText(max(sizeKB, 2048)<<10))
	}
	return c
}

// clockCheck: whether the timed loops tick on the TSC (verbs.ClockVerdict).
func clockCheck(o Options) Check {
	verdict := o.Clock
	if verdict == nil {
		verdict = verbs.ClockVerdict
	}
	c := Check{Name: "clock"}
	useTSC, note := verdict(o.Root)
	switch {
	case useTSC && note == "":
		c.Verdict, c.Found = OK, "the timed loops tick on the TSC (constant and nonstop, offered by the kernel as a clocksource)"
	case useTSC:
		c.Verdict, c.Found = OK, note
	case strings.HasPrefix(note, "no TSC on "):
		c.Verdict, c.Found = OK, note // nothing to fix on this architecture
	default:
		c.Verdict, c.Found = Warn, note
		c.Fix = "results stay correct (CLOCK_MONOTONIC_RAW costs a little more per stamp); in a VM, give the guest an invariant TSC (qemu/KVM: -cpu host or +invtsc), on bare metal check the BIOS and the kernel log for 'TSC unstable'"
	}
	return c
}
