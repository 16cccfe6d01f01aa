package result

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is the JSON Schema of a Result (result/schema.json). The readers (ReadAll,
// ReadJSON) validate every JSON record against it, and so do the tests of what the
// writers write.
//
//go:embed schema.json
var Schema []byte

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	var doc any
	if err := json.Unmarshal(Schema, &doc); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("result.json")
})

// Validate checks one JSON document, a result, against Schema. Its error names the
// field the schema rejects (as a JSON pointer) and why.
func Validate(doc []byte) error {
	sch, err := compiled()
	if err != nil {
		return fmt.Errorf("result/schema.json: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = sch.Validate(inst)
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	for len(ve.Causes) > 0 { // the innermost reason, where the field is named
		ve = ve.Causes[0]
	}
	field := "the top level"
	if len(ve.InstanceLocation) > 0 {
		field = "field /" + strings.Join(ve.InstanceLocation, "/")
	}
	return fmt.Errorf("not a result of schema version %d: %s: %s", SchemaVersion, field, ve.ErrorKind.LocalizedString(english))
}

var english = message.NewPrinter(language.English)
