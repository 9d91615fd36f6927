package strictyaml

import (
	"strings"
	"testing"
)

type probe struct {
	ReadOnlyRootFilesystem *bool  `json:"readOnlyRootFilesystem,omitempty"`
	Name                   string `json:"name"`
	Nested                 struct {
		Port int `json:"port"`
	} `json:"nested"`
}

func TestUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		name, doc, wantErr string
	}{
		{"valid", "name: a\nreadOnlyRootFilesystem: true\nnested: {port: 1}\n", ""},
		{"case differs", "name: a\nreadonlyRootFilesystem: true\n", "unknown field"},
		{"unknown", "name: a\nnmae: b\n", "unknown field"},
		{"unknown nested", "nested: {prot: 1}\n", "unknown field"},
		{"duplicate", "name: a\nname: b\n", "yaml"},
		{"wrong type", "nested: {port: x}\n", "decode"},
		{"not yaml", "name: [\n", "yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p probe
			err := Unmarshal([]byte(tc.doc), &p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.ReadOnlyRootFilesystem == nil || !*p.ReadOnlyRootFilesystem || p.Nested.Port != 1 {
					t.Errorf("decoded %+v", p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
