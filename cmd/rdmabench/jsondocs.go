package main

import (
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// The JSON the CLI writes besides results (result/schema.json) and tuned reports (their
// own schema_version): each document or line carries docsSchemaVersion, and its JSON
// Schema is in docs/schemas/, generated from the types here and in doctor (make docs;
// TestJSONSchemas fails while one is stale).
const docsSchemaVersion = 1

// devicesDoc is devices --json.
type devicesDoc struct {
	SchemaVersion int                `json:"schema_version"`
	Devices       []verbs.DeviceInfo `json:"devices"`
}

// gidDoc is devices --gid --json: the GID rdmabench (and perftest) would pick.
type gidDoc struct {
	SchemaVersion int `json:"schema_version"`
	verbs.Choice
}

// intervalLine is one --interval line (NDJSON).
type intervalLine struct {
	SchemaVersion int `json:"schema_version"`
	result.Interval
}
