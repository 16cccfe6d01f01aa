package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The forms results are kept in, each written and read here and nowhere else:
//
//	JSON    one indented document (--json): the result, or an array of several; the
//	        readers also take objects one after another
//	NDJSON  one compact object per line (a sweep's results stream)
//	CSV     a header (CSVHeader) and one row per result (--csv); a summary: it holds
//	        the columns of CSVHeader only (see ReadCSV)
//
// Every reader checks every result's schema version, whatever the form.

// Record is what the forms hold: a Result, or a type that embeds one, its fields at the
// top level, and adds keys of its own (a sweep stream's line adds sweep_wall_ns, which
// the schema allows). Only such types satisfy it.
type Record interface {
	result() Result
}

func (r Result) result() Result { return r }

// Encoder writes records in one form. Flush ends the output: call it once after the
// last Encode (a CSV of no results is still its header).
type Encoder interface {
	Encode(Record) error
	Flush() error
}

// NewJSONEncoder writes each record as an indented JSON object (what --json writes).
func NewJSONEncoder(w io.Writer) Encoder {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return jsonEncoder{e}
}

// NewNDJSONEncoder writes each record as one line of compact JSON. Each record is one
// Write to w, so a stream cut short loses at most its last line.
func NewNDJSONEncoder(w io.Writer) Encoder { return jsonEncoder{json.NewEncoder(w)} }

type jsonEncoder struct{ e *json.Encoder }

func (j jsonEncoder) Encode(r Record) error { return j.e.Encode(r) }
func (jsonEncoder) Flush() error            { return nil }

// AppendLine returns a stream's writer (the sweep's results stream, the hunt's records):
// each value is appended to w as one line of compact JSON in one Write (HTML
// characters as they are: ">=" stays ">="), and where w can Sync (an *os.File), synced
// before it returns, so that a line on disk is a run not lost and a stream cut short
// loses at most its last line.
func AppendLine[T any](w io.Writer) func(T) error {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	s, _ := w.(interface{ Sync() error })
	return func(v T) error {
		if err := e.Encode(v); err != nil {
			return err
		}
		if s != nil {
			return s.Sync()
		}
		return nil
	}
}

// WriteAll encodes every result with e, then flushes it.
func WriteAll(e Encoder, rs []Result) error {
	for _, r := range rs {
		if err := e.Encode(r); err != nil {
			return err
		}
	}
	return e.Flush()
}

// WriteJSONDocument writes results as one JSON document, indented: the result itself
// when there is one, an array of them when there are several or none (ReadAll reads
// both). Unlike one object after another, any JSON parser reads it whole.
func WriteJSONDocument(w io.Writer, rs []Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	if len(rs) == 1 {
		return e.Encode(rs[0])
	}
	if rs == nil {
		rs = []Result{}
	}
	return e.Encode(rs)
}

// WriteJSON writes one result, indented.
func WriteJSON(w io.Writer, r Result) error { return NewJSONEncoder(w).Encode(r) }

// ReadAll reads results in any form: JSON (one result, several one after another, an
// array of them, or NDJSON) or CSV (told by its header). Every result must have this
// rdmabench's schema version, whatever the form; the error names the line, the version
// found and the one read. What was read before an error is returned with it.
func ReadAll(r io.Reader) ([]Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	if isCSV(data) {
		return decodeCSV(data)
	}
	return decodeJSON[Result](data)
}

// ReadJSON reads records from JSON: one object, several one after another (NDJSON is
// that, a line each), or arrays of them. Every record must have this rdmabench's
// schema version. What was read before an error is returned with it.
func ReadJSON[T Record](r io.Reader) ([]T, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	return decodeJSON[T](data)
}

func decodeJSON[T Record](data []byte) ([]T, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []T
	for {
		start := valueStart(data, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			at := start
			if se := (*json.SyntaxError)(nil); errors.As(err, &se) && se.Offset > 0 {
				at = se.Offset - 1
			}
			return out, fmt.Errorf("reading results: line %d: %w", lineAt(data, at), err)
		}
		line := lineAt(data, start)
		if raw[0] == '[' {
			var many []json.RawMessage
			if err := json.Unmarshal(raw, &many); err != nil {
				return out, fmt.Errorf("reading results: line %d: %w", line, err)
			}
			all := make([]T, 0, len(many)) // an array is read whole, or not at all
			for i, el := range many {
				one, err := decodeRecord[T](el)
				if err != nil {
					return out, fmt.Errorf("line %d: element %d of an array: %w", line, i, err)
				}
				all = append(all, one)
			}
			out = append(out, all...)
			continue
		}
		one, err := decodeRecord[T](raw)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, one)
	}
}

// decodeRecord reads one record: its schema version first (another version's keys may
// mean something else), then the whole record against the schema, which names the
// field it refuses.
func decodeRecord[T Record](raw json.RawMessage) (T, error) {
	var one T
	if err := json.Unmarshal(raw, &one); err != nil {
		return one, fmt.Errorf("reading results: %w", err)
	}
	if err := checkVersion(one.result().SchemaVersion); err != nil {
		return one, err
	}
	if err := Validate(raw); err != nil {
		return one, err
	}
	return one, nil
}

// checkVersion refuses a result written under another schema: its keys may mean
// something else (a version 1 percentile is never null, whatever the sample count).
func checkVersion(v int) error {
	switch {
	case v == SchemaVersion:
		return nil
	case v == 0:
		return fmt.Errorf("not an rdmabench result: no schema_version (this rdmabench reads schema_version %d)", SchemaVersion)
	}
	return fmt.Errorf("result has schema_version %d; this rdmabench reads schema_version %d", v, SchemaVersion)
}

// valueStart is where the next JSON value begins: off, past white space.
func valueStart(data []byte, off int64) int64 {
	for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n"), data[off]) >= 0 {
		off++
	}
	return off
}

// lineAt is the 1-based line of byte offset off.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
