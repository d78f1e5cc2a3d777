package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-json-experiment/json/jsontext"
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

// sessionDecoders are jsontext decoders for Decode, kept between uses.
var sessionDecoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewReader(nil)) }}

// Decode reads the JSON Encode wrote token by token: encoding/json's
// reflection (and a second pass for each value) was a thirtieth of a
// page's CPU.
func (sessionCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	if len(b) == 0 || b[0] != '{' {
		return scs.GobCodec{}.Decode(b)
	}
	dec := sessionDecoders.Get().(*jsontext.Decoder)
	defer sessionDecoders.Put(dec)
	dec.Reset(bytes.NewReader(b))
	deadline, values, err := decodeSession(dec)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("decode session: %w", err)
	}
	return deadline, values, nil
}

// decodeSession reads {"d": deadline, "v": {key: string or integer, ...}}.
func decodeSession(dec *jsontext.Decoder) (deadline time.Time, values map[string]any, err error) {
	if err := readDelim(dec, '{'); err != nil {
		return deadline, nil, err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return deadline, nil, err
		}
		switch name.String() {
		case "d":
			tok, err := dec.ReadToken()
			if err != nil {
				return deadline, nil, err
			}
			if deadline, err = time.Parse(time.RFC3339Nano, tok.String()); err != nil {
				return deadline, nil, fmt.Errorf("deadline: %w", err)
			}
		case "v":
			if values, err = decodeSessionValues(dec); err != nil {
				return deadline, nil, err
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return deadline, nil, err
			}
		}
	}
	if err := readDelim(dec, '}'); err != nil {
		return deadline, nil, err
	}
	if values == nil {
		values = map[string]any{}
	}
	return deadline, values, nil
}

// decodeSessionValues reads the values object: strings, and integers as
// int64s (anything else is an error, as Encode writes nothing else).
func decodeSessionValues(dec *jsontext.Decoder) (map[string]any, error) {
	if err := readDelim(dec, '{'); err != nil {
		return nil, err
	}
	values := make(map[string]any, 8)
	for dec.PeekKind() != '}' {
		key, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		k := key.String()
		v, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", k, err)
		}
		switch v.Kind() {
		case '"':
			values[k] = v.String()
		case '0':
			n, err := strconv.ParseInt(v.String(), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("value %q: %w", k, err)
			}
			values[k] = n
		default:
			return nil, fmt.Errorf("value %q: a JSON %v, not a string or an integer", k, v.Kind())
		}
	}
	return values, readDelim(dec, '}')
}

// readDelim reads the object delimiter want.
func readDelim(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("%v where %v was expected", tok.Kind(), want)
	}
	return nil
}
