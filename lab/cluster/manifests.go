package cluster

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

//go:embed k8s/*.yaml
var manifests embed.FS

// Dir is where the manifests live, from the module's root.
const Dir = "lab/cluster/k8s"

// Manifest is one file of Dir and the objects it holds, in order.
type Manifest struct {
	// File is the file's path from the module's root.
	File    string
	Objects []Object
}

// Object is one YAML document of a manifest: exactly one of Job and Claim
// is set, as its apiVersion and kind say.
type Object struct {
	// Line is where the document starts in its file.
	Line  int
	Job   *batchv1.Job
	Claim *corev1.PersistentVolumeClaim
}

// Name is the object's metadata.name.
func (o Object) Name() string {
	if o.Job != nil {
		return o.Job.Name
	}
	return o.Claim.Name
}

// Manifests decodes every file of Dir, in name order.
func Manifests() ([]Manifest, error) {
	names, err := fs.Glob(manifests, "k8s/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []Manifest
	var errs []error
	for _, n := range names {
		data, err := manifests.ReadFile(n)
		if err != nil {
			return nil, err
		}
		file := path.Join(Dir, path.Base(n))
		objs, err := Decode(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Manifest{File: file, Objects: objs})
	}
	return out, errors.Join(errs...)
}

// Decode reads the YAML documents of a manifest (file names it in errors)
// strictly into the Kubernetes API's types: a field the type does not
// have, as a misspelt key would be, is an error naming the file, the line
// and the field, where kubectl and the API server would drop it or refuse
// it only at apply time. The documents go from YAML to JSON and through
// encoding/json with unknown fields refused, since the API types are
// defined by their JSON form.
func Decode(file string, data []byte) ([]Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Object
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue // an empty document, as after a final ---
		}
		obj, err := decodeDocument(file, &doc)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
}

// decodeDocument decodes one document into the type its apiVersion and
// kind name.
func decodeDocument(file string, doc *yaml.Node) (Object, error) {
	root := doc.Content[0]
	obj := Object{Line: root.Line}
	var generic any
	if err := doc.Decode(&generic); err != nil {
		return obj, fmt.Errorf("%s:%d: %w", file, root.Line, err)
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return obj, fmt.Errorf("%s:%d: not a JSON-like document (every key a string): %w", file, root.Line, err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return obj, fmt.Errorf("%s:%d: apiVersion and kind: %w", file, root.Line, err)
	}
	var into any
	switch head.APIVersion + " " + head.Kind {
	case "batch/v1 Job":
		obj.Job = &batchv1.Job{}
		into = obj.Job
	case "v1 PersistentVolumeClaim":
		obj.Claim = &corev1.PersistentVolumeClaim{}
		into = obj.Claim
	default:
		return obj, fmt.Errorf("%s:%d: kind: %q of apiVersion %q: expected a batch/v1 Job or a v1 PersistentVolumeClaim",
			file, root.Line, head.Kind, head.APIVersion)
	}
	jd := json.NewDecoder(bytes.NewReader(js))
	jd.DisallowUnknownFields()
	if err := jd.Decode(into); err != nil {
		return obj, fmt.Errorf("%s:%d: %s", file, lineOf(root, err), describe(err, head.Kind))
	}
	return obj, nil
}

var unknownField = regexp.MustCompile(`^json: unknown field "([^"]+)"$`)

// describe says what is wrong in the loader's style: the field, then what
// was expected.
func describe(err error, kind string) string {
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("%s: no such field in a %s (misspelt, or in the wrong place)", m[1], kind)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: a %s where a %s expects %s", typeErr.Field, typeErr.Value, kind, typeErr.Type)
	}
	return err.Error()
}

// lineOf finds the line of the key an error names (an unknown field's
// name, or the last element of a mistyped field's path), searching the
// document in order; the document's own line when it names none.
func lineOf(root *yaml.Node, err error) int {
	var key string
	var typeErr *json.UnmarshalTypeError
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		key = m[1]
	} else if errors.As(err, &typeErr) && typeErr.Field != "" {
		key = typeErr.Field[strings.LastIndex(typeErr.Field, ".")+1:]
	}
	if key == "" {
		return root.Line
	}
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 && c.Value == key {
				return c.Line
			}
			if l := find(c); l != 0 {
				return l
			}
		}
		return 0
	}
	if l := find(root); l != 0 {
		return l
	}
	return root.Line
}
