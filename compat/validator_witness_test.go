package compat

import "testing"

// witnessBackward runs Backward from old.json of oldFiles to new.json of
// newFiles, after proving with the validator that inst is accepted by the
// old schema and refused by the new one (the change is breaking).
func witnessBackward(t *testing.T, oldFiles, newFiles map[string]string, inst string) Report {
	t.Helper()
	if validatorRefuses(t, oldFiles, "old.json", inst) {
		t.Fatalf("the old schema refuses %s: not a witness", inst)
	}
	if !validatorRefuses(t, newFiles, "new.json", inst) {
		t.Fatalf("the new schema accepts %s: not a witness", inst)
	}
	mk := func(files map[string]string) *Source {
		l := memLoader{files: map[string][]byte{}}
		for k, v := range files {
			l.files[k] = []byte(v)
		}
		return NewSource(l)
	}
	return Backward(mk(oldFiles), "old.json", mk(newFiles), "new.json")
}
