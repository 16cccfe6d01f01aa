package result

import _ "embed"

// Schema is the JSON Schema of a Result (result/schema.json). Tests validate results
// against it (internal/schemacheck); the binary does not link a validator.
//
//go:embed schema.json
var Schema []byte
