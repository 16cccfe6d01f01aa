package sweep

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// FuzzStream reads a sweep's results stream as --resume does: no input may panic, and
// every line it returns is a result of this schema version with a budget charge that
// is not negative.
func FuzzStream(f *testing.F) {
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, Iterations: 1000,
		SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1}, Iterations: 1000, BWGbps: 0.3, DurationNS: 5e8}
	b, _ := json.Marshal(Recorded{Result: r, WallNS: 7e8})
	f.Add(append(append(b, '\n'), b...))
	f.Add(bytes.Replace(b, []byte(`"sweep_wall_ns":700000000`), []byte(`"sweep_wall_ns":-5`), 1))
	f.Add([]byte(`{"schema_version":3,"conf`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, _ := ReadStream(bytes.NewReader(data))
		for i, l := range lines {
			if l.SchemaVersion != result.SchemaVersion {
				t.Fatalf("line %d has schema_version %d", i, l.SchemaVersion)
			}
			if l.charge() < 0 {
				t.Fatalf("line %d charges the budget %v", i, l.charge())
			}
		}
	})
}
