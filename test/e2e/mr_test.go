//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestMR: registering memory is expensive (claim C2). On the server's device, the p50
// registration time grows with the size, warm and cold: 64M costs more than 4K.
func TestMR(t *testing.T) {
	needDevice(t)
	file := filepath.Join(t.TempDir(), "mr.json")
	out, code := run(t, "mr", "-d", srvDev, "--sizes", "4K,1M,64M", "-n", "20", "--modes", "warm,cold", "--json", file)
	t.Logf("rdmabench mr:\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		Rows          []struct {
			Size    int    `json:"size_bytes"`
			Mode    string `json:"mode"`
			Skipped string `json:"skipped"`
			Error   string `json:"error"`
			Reg     struct {
				Samples int    `json:"samples"`
				P50     *int64 `json:"p50"`
			} `json:"reg_ns"`
			Dereg struct {
				Samples int `json:"samples"`
			} `json:"dereg_ns"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if doc.SchemaVersion != 1 || doc.Kind != "mr" || len(doc.Rows) != 6 {
		t.Fatalf("document: schema %d, kind %q, %d rows (want 6)", doc.SchemaVersion, doc.Kind, len(doc.Rows))
	}
	p50 := map[string]map[int]int64{}
	for _, r := range doc.Rows {
		if r.Skipped != "" || r.Error != "" || r.Reg.Samples != 20 || r.Dereg.Samples != 20 || r.Reg.P50 == nil {
			t.Errorf("%d %s did not complete: skipped %q, error %q, %d/%d samples", r.Size, r.Mode, r.Skipped, r.Error, r.Reg.Samples, r.Dereg.Samples)
			continue
		}
		if p50[r.Mode] == nil {
			p50[r.Mode] = map[int]int64{}
		}
		p50[r.Mode][r.Size] = *r.Reg.P50
	}
	for _, mode := range []string{"warm", "cold"} {
		small, big := p50[mode][4<<10], p50[mode][64<<20]
		if small == 0 || big == 0 {
			continue // reported above
		}
		if big <= small {
			t.Errorf("%s: p50 reg at 64M (%d ns) is not above p50 reg at 4K (%d ns)", mode, big, small)
		} else {
			t.Logf("%s: p50 reg 4K %d ns, 64M %d ns (x%.0f)", mode, small, big, float64(big)/float64(small))
		}
	}
}
