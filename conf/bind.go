package conf

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

var errRange = strconv.ErrRange

var durationType = reflect.TypeFor[time.Duration]()

// field is one tagged struct field and the key it is bound to.
type field struct {
	key  string
	unit time.Duration // durations only
	v    reflect.Value
	path string // Go field name, for ErrTarget messages
}

var units = map[string]time.Duration{
	"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond,
	"s": time.Second, "m": time.Minute, "h": time.Hour,
}

// fieldsOf lists the tagged fields of *struct or struct v in declaration
// order. settable requires a pointer so the fields can be written.
func fieldsOf(x any, settable bool) ([]field, error) {
	v := reflect.ValueOf(x)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("%w: nil %T", ErrTarget, x)
		}
		v = v.Elem()
	} else if settable {
		return nil, fmt.Errorf("%w: %T is not a pointer", ErrTarget, x)
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %T does not point to a struct", ErrTarget, x)
	}
	var out []field
	if err := collect(v, "", settable, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func collect(v reflect.Value, prefix string, settable bool, out *[]field) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, tagged := sf.Tag.Lookup("conf")
		if tag == "-" {
			continue
		}
		fv := v.Field(i)
		if !tagged {
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.IsExported() {
				if err := collect(fv, prefix+sf.Name+".", settable, out); err != nil {
					return err
				}
			}
			continue
		}
		key, opt, _ := strings.Cut(tag, ",")
		f := field{key: key, v: fv, path: prefix + sf.Name}
		if key == "" {
			return fmt.Errorf("%w: field %s has an empty conf key", ErrTarget, f.path)
		}
		if !sf.IsExported() || (settable && !fv.CanSet()) {
			return fmt.Errorf("%w: field %s (%q) is not settable", ErrTarget, f.path, key)
		}
		if sf.Type == durationType {
			f.unit = time.Millisecond
			if opt != "" {
				u, ok := units[opt]
				if !ok {
					return fmt.Errorf("%w: field %s: unknown duration unit %q", ErrTarget, f.path, opt)
				}
				f.unit = u
			}
		} else if !supported(sf.Type.Kind()) {
			return fmt.Errorf("%w: field %s (%q) has unsupported type %s", ErrTarget, f.path, key, sf.Type)
		}
		*out = append(*out, f)
	}
	return nil
}

func supported(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// typeName is the name used in ValueError: the Go type as written.
func typeName(f field) string { return f.v.Type().String() }

// set parses s into f. The returned error is a strconv error (or nil); the
// caller wraps it with the file position.
func (f field) set(s string) error {
	v := f.v
	if v.Type() == durationType {
		d, err := parseDuration(s, f.unit)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		// Boolean.parseBoolean never fails: anything but "true" is false.
		v.SetBool(strings.EqualFold(s, "true"))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(n)
	}
	return nil
}

// parseDuration reads an integer count of unit, or a Go duration string.
func parseDuration(s string, unit time.Duration) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		d := time.Duration(n) * unit
		if n != 0 && d/unit != time.Duration(n) {
			return 0, strconv.ErrRange
		}
		return d, nil
	} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, strconv.ErrRange
	}
	return time.ParseDuration(s)
}

// format renders f's current value so that set reads it back unchanged.
func (f field) format() string {
	v := f.v
	if v.Type() == durationType {
		d := time.Duration(v.Int())
		if d%f.unit == 0 {
			return strconv.FormatInt(int64(d/f.unit), 10)
		}
		return d.String()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, v.Type().Bits())
	}
	return ""
}
