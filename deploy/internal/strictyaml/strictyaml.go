// Package strictyaml decodes YAML the way the Kubernetes API server does
// with strict field validation: field names are matched case-sensitively,
// and unknown or duplicate fields are errors.
//
// sigs.k8s.io/yaml's own UnmarshalStrict is not enough for that: it goes
// through encoding/json, which matches field names case-insensitively, so
// `readonlyRootFilesystem: true` would pass a test and then be dropped (or
// rejected) by the API server.
package strictyaml

import (
	"errors"
	"fmt"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Unmarshal decodes a single YAML document into v strictly.
func Unmarshal(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data) // duplicate keys fail here
	if err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("strict decoding: %w", errors.Join(strictErrs...))
	}
	return nil
}
