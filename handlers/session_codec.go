package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/alexedwards/scs/v2"
)

// sessionCodec encodes a session's data as JSON: its values are strings
// and int64s (the session keys in this package), which JSON keeps apart
// when numbers are read as json.Number. scs's default, gob, describes its
// types again in every encoded session, and decoding that was a twentieth
// of a page's CPU. Sessions saved by gob before (their first byte is never
// '{') are still read, and saved as JSON at their next change.
type sessionCodec struct{}

// sessionData is an encoded session.
type sessionData struct {
	Deadline time.Time                  `json:"d"`
	Values   map[string]json.RawMessage `json:"v"`
}

func (sessionCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	d := sessionData{Deadline: deadline, Values: make(map[string]json.RawMessage, len(values))}
	for k, v := range values {
		switch v := v.(type) {
		case string:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("session value %q: %w", k, err)
			}
			d.Values[k] = b
		case int64:
			d.Values[k] = strconv.AppendInt(nil, v, 10)
		default:
			return nil, fmt.Errorf("session value %q: type %T cannot be stored (strings and int64 only)", k, v)
		}
	}
	return json.Marshal(d)
}

// Decode reads what Encode wrote, numbers as json.Number so that the
// int64s come back as they went in.
func (sessionCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	if len(b) == 0 || b[0] != '{' {
		return scs.GobCodec{}.Decode(b)
	}
	var d struct {
		Deadline time.Time      `json:"d"`
		Values   map[string]any `json:"v"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return time.Time{}, nil, fmt.Errorf("decode session: %w", err)
	}
	values := make(map[string]any, len(d.Values))
	for k, v := range d.Values {
		switch v := v.(type) {
		case string:
			values[k] = v
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return time.Time{}, nil, fmt.Errorf("decode session: value %q: %w", k, err)
			}
			values[k] = n
		default:
			return time.Time{}, nil, fmt.Errorf("decode session: value %q: a JSON %T, not a string or an integer", k, v)
		}
	}
	return d.Deadline, values, nil
}
