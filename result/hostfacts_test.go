package result_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/result"
)

// jsonNames are the JSON keys of struct type t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// The schema describes every fact of host.Facts and of a PCIe link, by its JSON name,
// requires none of the facts (absent is unknown), and refuses any other key.
func TestSchemaDescribesEveryHostFact(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(result.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Defs["device"].Properties["host_facts"]; !ok {
		t.Fatal("$defs/device has no host_facts")
	}
	for _, c := range []struct {
		def      string
		typ      reflect.Type
		required bool
	}{{"host_facts", reflect.TypeFor[host.Facts](), false}, {"pcie_link", reflect.TypeFor[host.PCIeLink](), true}} {
		d, ok := doc.Defs[c.def]
		if !ok {
			t.Fatalf("no $defs/%s", c.def)
		}
		names := jsonNames(c.typ)
		for _, n := range names {
			if _, ok := d.Properties[n]; !ok {
				t.Errorf("$defs/%s lacks %s (%s)", c.def, n, c.typ)
			}
		}
		for n := range d.Properties {
			if !slices.Contains(names, n) {
				t.Errorf("$defs/%s has %s, which %s does not", c.def, n, c.typ)
			}
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("$defs/%s must refuse other keys", c.def)
		}
		// A link's four numbers are always written; of the facts, none.
		if c.required && len(d.Required) != len(names) || !c.required && len(d.Required) != 0 {
			t.Errorf("$defs/%s requires %q", c.def, d.Required)
		}
	}
}

// allFacts has every fact known: a result carrying it validates only if the schema
// has every key.
func allFacts() *host.Facts {
	f := host.Read("../host/testdata/cx6-gen3", "mlx5_0")
	f.Notes = []string{"PCIe current link unknown: current_link_speed \"Unknown\", current_link_width \"0\""}
	f.ClockDomain = host.Read("../host/testdata/rxe", "").ClockDomain // a real machine's command line names none
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			panic("the fixture lacks " + v.Type().Field(i).Name)
		}
	}
	return &f
}

func TestSchemaAcceptsHostFacts(t *testing.T) {
	l, h, _ := result.NewLatency(result.FromSamples(ramp(1000)))
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1},
		LatKind: "completion_under_load", Clock: "tsc", Lat: l, Histogram: h,
		Client: result.Device{Name: "mlx5_0", HostFacts: allFacts()}}
	unknown := host.Read("../host/testdata/rxe", "rxe0") // no PCI function: no link, no node
	r.ServerDevice = result.Device{Name: "rxe0", HostFacts: &unknown}
	var buf bytes.Buffer
	if err := result.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, key := range []string{`"host_facts"`, `"pcie_max_link"`, `"speed_gt_per_s": 16`, `"numa_node": 1`, `"rdma_core_version": "44.0"`} {
		if !strings.Contains(good, key) {
			t.Fatalf("the result has no %s:\n%s", key, good)
		}
	}
	if err := result.Validate(buf.Bytes()); err != nil {
		t.Fatalf("a result with host facts must validate: %v", err)
	}
	// Reading it back keeps the facts.
	rs, err := result.ReadAll(strings.NewReader(good))
	if err != nil || len(rs) != 1 || !reflect.DeepEqual(rs[0].Client.HostFacts, r.Client.HostFacts) || rs[0].ServerDevice.HostFacts.PCIeLink != nil {
		t.Fatalf("read back: %v, %+v", err, rs)
	}
	for _, c := range []struct{ from, to, field string }{
		{`"numa_node": 1`, `"numa_node": -2`, "numa_node"},
		{`"numa_node": 1`, `"numa_node": "1"`, "numa_node"},
		{`"width": 16,`, ``, "pcie_link"},
		{`"speed_gt_per_s": 8,`, `"speed_gt_per_s": 9,`, "speed_gt_per_s"},
		{`"kernel_release"`, `"kernel"`, "host_facts"},
		{`"cpu_governors": [`, `"cpu_governors": [1, `, "cpu_governors"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("the result has no %s", c.from)
		}
		if err := result.Validate([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s -> %s: want a refusal naming %s, got %v", c.from, c.to, c.field, err)
		}
	}
}

// A result is measured on a virtual clock when any of its hosts keeps virtual time:
// its client's, its server's, or a fan-out server's.
func TestVirtualClock(t *testing.T) {
	virtual, real, machine := host.Read("../host/testdata/rxe", "rxe0"), host.Read("../host/testdata/bed-real", ""), host.Read("../host/testdata/cx6-gen3", "mlx5_0")
	if virtual.ClockDomain != host.ClockVirtual || real.ClockDomain != host.ClockReal || machine.ClockDomain != "" {
		t.Fatalf("fixtures: %q %q %q", virtual.ClockDomain, real.ClockDomain, machine.ClockDomain)
	}
	dev := func(f *host.Facts) result.Device { return result.Device{Name: "d", HostFacts: f} }
	for _, c := range []struct {
		name string
		r    result.Result
		want bool
	}{
		{"no facts", result.Result{}, false},
		{"client virtual", result.Result{Client: dev(&virtual), ServerDevice: dev(&real)}, true},
		{"server virtual", result.Result{Client: dev(&machine), ServerDevice: dev(&virtual)}, true},
		{"real bed", result.Result{Client: dev(&real), ServerDevice: dev(&real)}, false},
		{"a real machine", result.Result{Client: dev(&machine), ServerDevice: dev(nil)}, false},
		{"a fan-out server virtual", result.Result{Client: dev(&machine), Fan: &result.Fan{Peers: []result.Peer{{Device: dev(&machine)}, {Device: dev(&virtual)}}}}, true},
		{"fan-out servers real", result.Result{Client: dev(&machine), Fan: &result.Fan{Peers: []result.Peer{{Device: dev(&real)}}}}, false},
	} {
		if got := c.r.VirtualClock(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
