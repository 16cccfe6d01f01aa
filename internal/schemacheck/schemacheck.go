// Package schemacheck validates JSON documents against the result schema
// (result/schema.json). Only tests import it, so that the validator is not linked
// into rdmabench.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/rdmabench/rdmabench/result"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	var doc any
	if err := json.Unmarshal(result.Schema, &doc); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("result.json")
})

// Validate checks one JSON document, a result, against result.Schema.
func Validate(doc []byte) error {
	sch, err := compiled()
	if err != nil {
		return fmt.Errorf("result/schema.json: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(inst)
}
