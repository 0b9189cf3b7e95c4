// Package durjson encodes JSON as encoding/json does, except that every
// time.Duration is written as its Go string ("1.5s", "250ms"): a person
// or a jq filter reading a report should not have to know that a bare
// 5000000000 means five seconds.
package durjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Marshal encodes v as encoding/json would, struct fields in their
// declared order and map keys sorted, except that a time.Duration is
// written as its string. A value that marshals itself is left to do so.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeReadable(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// writeReadable encodes v as encoding/json would, fields in their declared
// order, except that a time.Duration is written as its string.
func writeReadable(buf *bytes.Buffer, v reflect.Value) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	t := v.Type()
	switch {
	case t == durationType:
		return writeJSON(buf, time.Duration(v.Int()).String())
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return writeJSON(buf, v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return writeReadable(buf, v.Elem())
	case reflect.Struct:
		return writeStruct(buf, v)
	case reflect.Map:
		if v.IsNil() || t.Key().Kind() != reflect.String {
			return writeJSON(buf, v.Interface())
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, k.String()); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeReadable(buf, v.MapIndex(k)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && (v.IsNil() || t.Elem().Kind() == reflect.Uint8) {
			return writeJSON(buf, v.Interface())
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeReadable(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	return writeJSON(buf, v.Interface())
}

// writeStruct writes a struct's exported fields under their json names,
// honouring "-" and omitempty as encoding/json does.
func writeStruct(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('{')
	first := true
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if slices.Contains(strings.Split(opts, ","), "omitempty") && isEmptyJSON(fv) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := writeJSON(buf, name); err != nil {
			return err
		}
		buf.WriteByte(':')
		if err := writeReadable(buf, fv); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// isEmptyJSON is encoding/json's notion of empty for omitempty.
func isEmptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

func writeJSON(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}
