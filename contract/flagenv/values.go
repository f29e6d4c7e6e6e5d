package flagenv

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The flag.Values of the field types Bind supports. Each String handles its zero value (a nil
// pointer), as the flag package may call it on one.

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }

func (v *stringValue) String() string {
	if v == nil {
		return ""
	}
	return string(*v)
}

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}

func (v *boolValue) String() string {
	if v == nil {
		return "false"
	}
	return strconv.FormatBool(bool(*v))
}

// IsBoolFlag lets the flag stand alone (--name is --name=true).
func (v *boolValue) IsBoolFlag() bool { return true }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 250ms, 2s or 1m30s")
	}
	*v = durationValue(d)
	return nil
}

func (v *durationValue) String() string {
	if v == nil {
		return "0s"
	}
	return time.Duration(*v).String()
}

// numberValue sets an int, int64, uint, uint64 or float64 field.
type numberValue struct{ p reflect.Value }

func (v numberValue) Set(s string) error {
	switch v.p.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.p.Type().Bits())
		if err != nil {
			return numberError(err, "an integer")
		}
		v.p.SetInt(n)
	case reflect.Uint, reflect.Uint64:
		n, err := strconv.ParseUint(s, 0, v.p.Type().Bits())
		if err != nil {
			return numberError(err, "a non-negative integer")
		}
		v.p.SetUint(n)
	default:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return numberError(err, "a number")
		}
		v.p.SetFloat(n)
	}
	return nil
}

func (v numberValue) String() string {
	if !v.p.IsValid() {
		return "0"
	}
	switch v.p.Kind() {
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.p.Int(), 10)
	case reflect.Uint, reflect.Uint64:
		return strconv.FormatUint(v.p.Uint(), 10)
	}
	return strconv.FormatFloat(v.p.Float(), 'g', -1, 64)
}

func numberError(err error, want string) error {
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("out of range")
	}
	return errors.New("want " + want)
}

// listValue is a comma-separated list; each Set replaces it.
type listValue []string

func (v *listValue) Set(s string) error {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*v = out
	return nil
}

func (v *listValue) String() string {
	if v == nil {
		return ""
	}
	return strings.Join(*v, ",")
}
