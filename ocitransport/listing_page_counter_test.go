package ocitransport

import "testing"

// TestListingPageCounterCountsOnlyTheListsNames: the count that refuses a
// flooded page (OCI-38) counts the elements of the top object's array
// members only, whatever splits the text into reads: strings holding
// brackets, commas or escaped quotes, nested objects and arrays, and
// annotations (an object member) count nothing of their own.
func TestListingPageCounterCountsOnlyTheListsNames(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int
	}{
		{`{"manifests":[]}`, 0},
		{`{"manifests":[ ]}`, 0},
		{`{"manifests":[{}]}`, 1},
		{`{"manifests":[{},{},{}]}`, 3},
		{`{"tags":["a,b","[c]","d\"],[e","\\"]}`, 4},
		{`{"manifests":[{"annotations":{"a":"[1,2]"},"urls":["x","y"]},[1,[2,3]]],"annotations":{"k":"v","l":"w"}}`, 2},
		{`{"errors":[{"code":"X"}],"tags":[ "a" , "b" ]}`, 3},
		{`["a","b","c"]`, 0},
		{`{"a":{"b":["x","y"]}}`, 0},
	} {
		for _, step := range []int{1, 3, len(c.text)} {
			e := elementCounter{max: 1 << 30}
			for i := 0; i < len(c.text); i += step {
				e.scan([]byte(c.text[i:min(i+step, len(c.text))]))
			}
			if e.n != c.n {
				t.Errorf("%s (reads of %d bytes): %d elements, want %d", c.text, step, e.n, c.n)
			}
		}
	}
	e := elementCounter{max: 2}
	if e.scan([]byte(`{"tags":["a","b"]}`)) {
		t.Error("two names refused at a bound of two")
	}
	e = elementCounter{max: 2}
	if !e.scan([]byte(`{"tags":["a","b","c"`)) {
		t.Error("three names passed a bound of two")
	}
}
