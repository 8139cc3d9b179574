package schema

import "testing"

func TestCheckIndexName(t *testing.T) {
	for name, ok := range map[string]bool{
		"menu-v2": true, "menu.2024_01": true, "BAD_NAME": false, "": false, ".": false, "..": false,
		"a b": false, "a,b": false, "a#b": false, "a:b": false, "a*": false, "_menu": false, "-menu": false, "+menu": false,
		string(make([]byte, 256)): false,
	} {
		if err := CheckIndexName(name); (err == nil) != ok {
			t.Errorf("CheckIndexName(%.20q) = %v, want ok %v", name, err, ok)
		}
	}
}
