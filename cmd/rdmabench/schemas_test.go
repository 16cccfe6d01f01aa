package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	"github.com/rdmabench/rdmabench/doctor"
	"github.com/rdmabench/rdmabench/hunt"
	"github.com/rdmabench/rdmabench/mrbench"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// schemasDir is docs/schemas/, from this package's directory.
const schemasDir = "../../docs/schemas"

// jsonDocs are the JSON documents and lines the CLI writes besides results and tuned
// reports, by the name of their schema file.
var jsonDocs = map[string]any{
	"tuned":             report.Tuned{},
	"sweep-modes":       report.ModesDoc{},
	"mr":                mrbench.Document{},
	"devices":           devicesDoc{},
	"devices-gid":       gidDoc{},
	"doctor":            doctor.Report{},
	"counters-snapshot": snapshotLine{},
	"counters-delta":    deltaLine{},
	"interval":          intervalLine{},
	"hunt":              hunt.Outcome{},
	"hunt-record":       huntRecordLines{},
}

// huntRecordLines stands for hunt.Record in jsonDocs: a line of a hunt's records stream
// is one of two objects, a point or a finding (oneOf, by kind), where hunt.Record is the
// two embedded in one type. huntPointLine and huntFindingLine are those two objects, key
// for key (TestHuntRecordLines keeps them hunt.Record's).
type huntRecordLines struct{}

type huntPointLine struct {
	Kind string `json:"kind"`
	hunt.Measurement
	SchemaVersion int `json:"schema_version"`
}

type huntFindingLine struct {
	Kind string `json:"kind"`
	hunt.Finding
	SchemaVersion int `json:"schema_version"`
}

// genSchema is the JSON Schema of v's type, as its JSON encoding has it: every field
// without omitempty required, no other key allowed.
func genSchema(name string, v any) ([]byte, error) {
	version := map[string]int{"doctor": doctor.SchemaVersion, "tuned": report.TunedSchemaVersion,
		"sweep-modes": report.ModesSchemaVersion, "mr": mrbench.SchemaVersion,
		"hunt": hunt.SchemaVersion, "hunt-record": hunt.SchemaVersion}[name]
	if version == 0 {
		version = docsSchemaVersion
	}
	var s *jsonschema.Schema
	if _, ok := v.(huntRecordLines); ok {
		// one of its kinds, each told by its kind
		s = &jsonschema.Schema{Version: jsonschema.Version, Description: "one line of a hunt's records stream (NDJSON): a point or a finding"}
		for _, k := range []struct {
			kind string
			v    any
		}{{hunt.KindPoint, huntPointLine{}}, {hunt.KindFinding, huntFindingLine{}}} {
			sub := reflectSchema(k.v, version)
			sub.Version = ""
			if p, ok := sub.Properties.Get("kind"); ok {
				p.Const = k.kind
			}
			s.OneOf = append(s.OneOf, sub)
		}
	} else {
		s = reflectSchema(v, version)
	}
	shapePoints(s, name)
	s.ID = jsonschema.ID("https://github.com/rdmabench/rdmabench/docs/schemas/" + name + ".schema.json")
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

// reflectSchema is the schema of v's type (genSchema), its schema_version version.
func reflectSchema(v any, version int) *jsonschema.Schema {
	r := jsonschema.Reflector{DoNotReference: true}
	s := r.Reflect(v)
	nullable(s, reflect.TypeOf(v))
	if p, ok := s.Properties.Get("schema_version"); ok {
		p.Const = version // a reader of another version's document is told at once
	}
	return s
}

// shapePoints narrows the schema of every plan.Point in document name to the keys its
// points hold: one Go type says both the sweep's points (profiles.Dims, the QP timeout
// optional) and the hunt's (every dimension; bidirectional written only when true, an
// optional dimension only off its default), its zero fields left out of the JSON.
func shapePoints(s *jsonschema.Schema, name string) {
	keys, optional := plan.DimKeys(), []string{"bidirectional"}
	for _, d := range plan.Dims {
		if d.Optional {
			optional = append(optional, d.Key)
		}
	}
	if !strings.HasPrefix(name, "hunt") {
		keys, optional = profiles.Dims, profiles.Optional
	}
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if s.Properties != nil {
			if _, ok := s.Properties.Get("traffic_class"); ok {
				if _, cfg := s.Properties.Get("test"); !cfg { // a plan.Point, not a plan
					s.Required = nil
					for _, k := range plan.DimKeys() {
						if !slices.Contains(keys, k) {
							s.Properties.Delete(k)
						} else if !slices.Contains(optional, k) {
							s.Required = append(s.Required, k)
						}
					}
					return
				}
			}
			for p := s.Properties.Oldest(); p != nil; p = p.Next() {
				walk(p.Value)
			}
		}
		walk(s.Items)
		walk(s.AdditionalProperties)
		for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf} {
			for _, x := range l {
				walk(x)
			}
		}
	}
	walk(s)
}

// nullable lets a field that is a pointer, a slice or a map be null, as its JSON is
// when it is nil (a counter not available, a statistic the samples do not support, a
// comparison not measured): the reflector makes it the plain type.
func nullable(s *jsonschema.Schema, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			nullable(s.Items, t.Elem())
		}
	case reflect.Map:
		if s.AdditionalProperties != nil {
			nullable(s.AdditionalProperties, t.Elem())
		}
	case reflect.Struct:
		if s.Properties == nil {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				nullable(s, f.Type) // its fields are this object's
				continue
			}
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			p, ok := s.Properties.Get(name)
			if !ok {
				continue
			}
			nullable(p, f.Type)
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map: // nil is null
				s.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}})
			}
		}
	}
}

// TestJSONSchemas keeps docs/schemas/ what the types generate (go test -run
// TestJSONSchemas -update, which make docs runs, rewrites them).
func TestJSONSchemas(t *testing.T) {
	names := make([]string, 0, len(jsonDocs))
	for n := range jsonDocs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		want, err := genSchema(n, jsonDocs[n])
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(schemasDir, n+".schema.json")
		if *updateDocs {
			if err := os.MkdirAll(schemasDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run make docs and commit it", path, err)
		}
	}
}

// validateDoc checks doc against docs/schemas/NAME.schema.json.
func validateDoc(t *testing.T, name string, doc []byte) {
	t.Helper()
	if err := validate(name, doc); err != nil {
		t.Fatalf("%s does not validate against its schema: %v\n%s", name, err, doc)
	}
}

func validate(name string, doc []byte) error {
	raw, err := os.ReadFile(filepath.Join(schemasDir, name+".schema.json"))
	if err != nil {
		return err
	}
	schema, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := sjs.NewCompiler()
	if err := c.AddResource(name+".json", schema); err != nil {
		return err
	}
	sch, err := c.Compile(name + ".json")
	if err != nil {
		return err
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// Every document the CLI writes validates against its schema: here the ones whose
// commands have no test of their own that sees them (devices, doctor and counters
// validate in theirs).
func TestIntervalLineSchema(t *testing.T) {
	l := intervalLine{docsSchemaVersion, result.Interval{Index: 2, DurationNS: 5e8, Messages: 100, Bytes: 6553600, BWGbps: 0.1, MsgRateMpps: 0.0002}}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	validateDoc(t, "interval", b)
	var ramp map[string]any
	json.Unmarshal(b, &ramp)
	ramp["schema_version"] = 2
	b, _ = json.Marshal(ramp)
	if err := validate("interval", b); err == nil {
		t.Fatal("a line of another schema_version must not validate")
	}
}

// A tuned report as sweep --json wrote it (the HTML report's fixture, from a demo)
// validates against its schema.
func TestTunedSchemaFixture(t *testing.T) {
	b, err := os.ReadFile("../../report/html/testdata/demo4-tuned.json")
	if err != nil {
		t.Fatal(err)
	}
	validateDoc(t, "tuned", b)
}
