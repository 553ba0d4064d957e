// Package schematest helps tests check that reports/SCHEMA.md documents
// every JSON field of the lab's formats.
package schematest

import (
	"reflect"
	"strings"
)

// Fields lists the JSON field names of the values' types and of every
// struct they hold (through pointers, slices and maps), each type once;
// time's types are leaves.
func Fields(values ...any) []string {
	seen := map[reflect.Type]bool{}
	var fields []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() == "time" {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				fields = append(fields, name)
				walk(f.Type)
			}
		}
	}
	for _, v := range values {
		walk(reflect.TypeOf(v))
	}
	return fields
}
