package mrbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// fakeTimer: registration costs 1 µs + 250 ns per 4K page (x4 cold, /512 pages huge),
// deregistration half that, with a little spread; huge has no hugepages when noHuge,
// odp is not supported, and failAt fails a size after 3 pairs.
func fakeTimer(noHuge bool, failAt int) Timer {
	return func(size int, mode string, n, _ int) ([]int64, []int64, error) {
		pages := int64((size + 4095) / 4096)
		per := int64(250)
		switch mode {
		case "cold":
			per *= 4
		case "huge":
			if noHuge {
				return nil, nil, verbs.ErrNoHugepages
			}
			pages = int64((size + HugePage - 1) / HugePage)
		case "odp":
			return nil, nil, verbs.ErrNoODP
		}
		var reg, dereg []int64
		for i := range n {
			if size == failAt && i == 3 {
				return reg, dereg, &verbs.VerbError{Verb: "ibv_reg_mr", Err: syscall.ENOMEM}
			}
			v := 1000 + per*pages + int64(i%5)*10
			reg, dereg = append(reg, v), append(dereg, v/2)
		}
		return reg, dereg, nil
	}
}

func opts() Options {
	return Options{
		Sizes: []int{4 << 10, 1 << 20, 64 << 20}, Modes: []string{"warm", "cold", "huge", "odp"}, Iterations: 20,
		Time: fakeTimer(true, -1), Device: Device{Name: "rxe0", Driver: "rxe", Port: 1, LinkLayer: "Ethernet"},
		Memlock: -1, PageSize: 4096, ToolVersion: "test",
		Now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
}

func TestRunRows(t *testing.T) {
	d := Run(opts())
	if len(d.Rows) != 12 {
		t.Fatalf("%d rows, want 12", len(d.Rows))
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Row{}
	for _, r := range d.Rows {
		byKey[fmt.Sprint(r.SizeBytes, r.Mode)] = r
	}
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		for _, mode := range []string{"warm", "cold"} {
			r := byKey[fmt.Sprint(size, mode)]
			if !r.OK() || r.Reg.Samples != 20 || r.Dereg.Samples != 20 || r.RegHistogram == "" || r.DeregHistogram == "" {
				t.Errorf("%d %s: %+v", size, mode, r)
				continue
			}
			// 20 samples support p50, not p99.
			if r.Reg.P50 == nil || r.Reg.P99 != nil || r.Dereg.P50 == nil {
				t.Errorf("%d %s: p50 %v p99 %v", size, mode, r.Reg.P50, r.Reg.P99)
			}
			if r.Pages != size/4096 {
				t.Errorf("%d %s: %d pages", size, mode, r.Pages)
			}
			want := float64(size) / (1 << 30) / (r.Reg.Mean / 1e9)
			if r.RegGiBps != want || want <= 0 {
				t.Errorf("%d %s: %v GiB/s, want %v", size, mode, r.RegGiBps, want)
			}
			h, err := result.DecodeHistogram(r.RegHistogram)
			if err != nil || h.TotalCount() != 20 {
				t.Errorf("%d %s: histogram %v, %v", size, mode, h.TotalCount(), err)
			}
		}
		if r := byKey[fmt.Sprint(size, "huge")]; r.Skipped != "no hugepages reserved (sysctl vm.nr_hugepages)" || r.Error != "" || r.Reg.Samples != 0 {
			t.Errorf("%d huge: %+v", size, r)
		}
		if r := byKey[fmt.Sprint(size, "odp")]; r.Skipped != "no ODP" || r.OK() {
			t.Errorf("%d odp: %+v", size, r)
		}
	}
	small, big := byKey[fmt.Sprint(4<<10, "warm")], byKey[fmt.Sprint(64<<20, "warm")]
	if *big.Reg.P50 <= *small.Reg.P50 {
		t.Errorf("p50 reg 64M %d <= 4K %d", *big.Reg.P50, *small.Reg.P50)
	}
	if d.Rows[0].SizeBytes != 4<<10 || d.Rows[0].Mode != "warm" || d.Rows[1].Mode != "cold" || d.Rows[4].SizeBytes != 1<<20 {
		t.Errorf("row order: %+v %+v", d.Rows[0], d.Rows[4])
	}
}

func TestHugePages(t *testing.T) {
	o := opts()
	o.Time, o.Modes, o.Sizes = fakeTimer(false, -1), []string{"huge"}, []int{4 << 10, 3 << 20}
	d := Run(o)
	if d.Rows[0].Pages != 1 || d.Rows[1].Pages != 2 || !d.Rows[0].OK() {
		t.Errorf("huge pages: %+v", d.Rows)
	}
}

func TestMemlock(t *testing.T) {
	o := opts()
	o.Memlock = 8 << 20
	d := Run(o)
	var failed []string
	for _, r := range d.Rows {
		if r.Error != "" {
			failed = append(failed, fmt.Sprint(result.FormatSize(r.SizeBytes), " ", r.Mode))
			if !strings.Contains(r.Error, "RLIMIT_MEMLOCK 8M") || !strings.Contains(r.Error, "ulimit -l") {
				t.Errorf("error does not name the limit and the fix: %s", r.Error)
			}
			if r.Reg.Samples != 0 || r.RegGiBps != 0 {
				t.Errorf("a refused row has numbers: %+v", r)
			}
		}
	}
	// warm, cold and huge at 64M (huge is refused before it is tried: it pins as much
	// as warm); odp pins nothing.
	if got := strings.Join(failed, ","); got != "64M warm,64M cold,64M huge" {
		t.Errorf("failed rows: %s", got)
	}
	if d.Err() != nil {
		t.Errorf("rows under the limit ran: %v", d.Err())
	}
	// Whole system pages are pinned: 5000 B take two 4 KiB pages, above a 6000-byte
	// limit; on hugepages too, a 4 KiB registration pins one 4 KiB page, not 2 MiB.
	o2 := opts()
	o2.Sizes, o2.Modes, o2.Memlock = []int{4096, 5000}, []string{"warm", "huge"}, 6000
	d2 := Run(o2)
	if d2.Rows[0].Error != "" || d2.Rows[1].Error != "" || !strings.Contains(d2.Rows[2].Error, "5000 pins 2 pages (8K)") || !strings.Contains(d2.Rows[3].Error, "5000 pins 2 pages (8K)") {
		t.Errorf("page-rounded limit: %+v", d2.Rows)
	}
	// CAP_IPC_LOCK lifts the limit.
	o.IPCLock = true
	for _, r := range Run(o).Rows {
		if r.Error != "" {
			t.Errorf("with CAP_IPC_LOCK: %s %s: %s", result.FormatSize(r.SizeBytes), r.Mode, r.Error)
		}
	}
}

// Every registration gets what a benchmark's buffer gets (verbs.Spec.Access): local
// write, remote write and read, and PCIe relaxed ordering unless disabled; the document
// and its table say which.
func TestAccessOfEveryRegistration(t *testing.T) {
	for _, disable := range []bool{false, true} {
		o := opts()
		o.DisablePCIeRelaxed = disable
		want := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
		if !disable {
			want |= verbs.AccessRelaxedOrdering
		}
		var got []int
		timer := o.Time
		o.Time = func(size int, mode string, n, access int) ([]int64, []int64, error) {
			got = append(got, access)
			return timer(size, mode, n, access)
		}
		d := Run(o)
		if len(got) != len(d.Rows) {
			t.Fatalf("disable %v: %d registrations timed for %d rows", disable, len(got), len(d.Rows))
		}
		for _, a := range got {
			if a != want {
				t.Errorf("disable %v: registered with %s, want %s", disable, verbs.AccessString(a), verbs.AccessString(want))
			}
		}
		var b strings.Builder
		Table(&b, d)
		if d.Config.PCIeRelaxedOrdering == disable || strings.Contains(b.String(), "without relaxed ordering") != disable {
			t.Errorf("disable %v: the document says relaxed ordering %v:\n%s", disable, d.Config.PCIeRelaxedOrdering, b.String())
		}
	}
}

func TestFailingSize(t *testing.T) {
	o := opts()
	o.Time = fakeTimer(true, 1<<20)
	d := Run(o)
	for _, r := range d.Rows {
		if r.SizeBytes == 1<<20 && (r.Mode == "warm" || r.Mode == "cold") {
			if !strings.Contains(r.Error, "ibv_reg_mr") || !strings.Contains(r.Error, "ulimit -l") || r.Reg.Samples != 3 || r.Reg.P50 != nil {
				t.Errorf("failing size: %+v", r)
			}
		} else if r.Error != "" {
			t.Errorf("%d %s failed: %s", r.SizeBytes, r.Mode, r.Error)
		}
	}
	if d.Err() != nil {
		t.Error(d.Err())
	}
}

func TestNothingMeasured(t *testing.T) {
	o := opts()
	o.Modes = []string{"huge", "odp"}
	if err := Run(o).Err(); !errors.Is(err, ErrNothingMeasured) {
		t.Errorf("only skipped rows: %v", err)
	}
	o.Modes = []string{"warm"}
	o.Time = func(int, string, int, int) ([]int64, []int64, error) { return nil, nil, errors.New("boom") }
	d := Run(o)
	if err := d.Err(); !errors.Is(err, ErrNothingMeasured) || d.Rows[0].Error != "boom" {
		t.Errorf("only failed rows: %v %+v", err, d.Rows[0])
	}
	// A timer that returns fewer samples than asked without an error is a failure.
	o.Time = func(int, string, int, int) ([]int64, []int64, error) { return []int64{1}, []int64{1}, nil }
	if r := Run(o).Rows[0]; !strings.Contains(r.Error, "timed 1 registrations") {
		t.Errorf("short series: %+v", r)
	}
}

func TestDocumentJSON(t *testing.T) {
	o := opts()
	o.Memlock = 8 << 20
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(Run(o)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"schema_version": 1.0, "kind": "mr", "tool_version": "test", "time": "2025-01-02T03:04:05Z", "memlock_bytes": float64(8 << 20), "cap_ipc_lock": false} {
		if doc[k] != want {
			t.Errorf("%s: %v, want %v", k, doc[k], want)
		}
	}
	if dev := doc["device"].(map[string]any); dev["name"] != "rxe0" || dev["port"] != 1.0 {
		t.Errorf("device: %v", dev)
	}
	cfg := doc["config"].(map[string]any)
	if fmt.Sprint(cfg["sizes"]) != fmt.Sprint([]any{4096.0, 1048576.0, 67108864.0}) || cfg["iterations"] != 20.0 || len(cfg["modes"].([]any)) != 4 {
		t.Errorf("config: %v", cfg)
	}
	rows := doc["rows"].([]any)
	first := rows[0].(map[string]any)
	for _, k := range []string{"size_bytes", "mode", "reg_ns", "dereg_ns", "reg_histogram", "dereg_histogram", "reg_gib_per_s", "pages"} {
		if _, ok := first[k]; !ok {
			t.Errorf("row has no %s: %v", k, first)
		}
	}
	if _, ok := first["skipped"]; ok {
		t.Errorf("a measured row says skipped: %v", first)
	}
	reg := first["reg_ns"].(map[string]any)
	if reg["samples"] != 20.0 || reg["p50"] == nil || reg["p99"] != nil {
		t.Errorf("reg_ns: %v", reg)
	}
	if huge := rows[2].(map[string]any); huge["mode"] != "huge" || huge["skipped"] == nil {
		t.Errorf("huge row: %v", huge)
	}
	last := rows[8].(map[string]any) // 64M warm
	if last["mode"] != "warm" || !strings.Contains(fmt.Sprint(last["error"]), "memlock") {
		t.Errorf("64M warm: %v", last)
	}
	// Unlimited is -1.
	o.Memlock = -1
	b.Reset()
	json.NewEncoder(&b).Encode(Run(o))
	if !strings.Contains(b.String(), `"memlock_bytes":-1`) {
		t.Errorf("unlimited memlock: %s", b.String()[:200])
	}
}

func TestTable(t *testing.T) {
	o := opts()
	o.Memlock = 8 << 20
	var b bytes.Buffer
	if err := Table(&b, Run(o)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"rxe0 port 1", "memlock 8M", "reg p50 us", "dereg mean us", "reg GiB/s", "skipped: no hugepages reserved (sysctl vm.nr_hugepages)", "skipped: no ODP", "failed", "error: 64M warm: 64M pins 16384 pages (64M), more than the memlock limit"} {
		if !strings.Contains(out, want) {
			t.Errorf("table has no %q:\n%s", want, out)
		}
	}
	// 4K warm: 1 µs + 250 ns, p50 from 20 samples; p99 unsupported.
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " 4K ") && strings.Contains(l, " warm ") {
			line = l
		}
	}
	if !strings.Contains(line, "1.27") || !strings.Contains(line, " - ") {
		t.Errorf("4K warm line: %q", line)
	}
	t.Log("\n" + out)
}

func TestDeviceOf(t *testing.T) {
	d := DeviceOf(verbs.DeviceInfo{Name: "mlx5_0", Driver: "mlx5", VendorID: 0x02c9, MaxMRSize: 1 << 40}, verbs.PortInfo{Port: 2, LinkLayer: "Ethernet"})
	if d.Name != "mlx5_0" || d.Port != 2 || d.LinkLayer != "Ethernet" || d.VendorID != 0x02c9 || d.MaxMRSize != 1<<40 {
		t.Errorf("%+v", d)
	}
}
