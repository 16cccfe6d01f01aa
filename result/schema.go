package result

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON Schema of a Result (result/schema.json).
//
//go:embed schema.json
var Schema []byte

// Validate checks one JSON document against Schema.
func Validate(doc []byte) error {
	var schemaDoc any
	if err := json.Unmarshal(Schema, &schemaDoc); err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.json", schemaDoc); err != nil {
		return err
	}
	sch, err := c.Compile("result.json")
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(inst)
}
