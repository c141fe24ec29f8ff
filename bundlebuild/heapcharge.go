package bundlebuild

import (
	"errors"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// What a schema is charged against the in-flight budget (BUILD-2, as
// amended): a bound of the heap its parse tree and its compile hold, not
// its bytes. encoding/json's tree of maps, slices and interfaces costs,
// per byte of document, from about 1 (one long string) to about 60
// ({"":0} repeated), peak heap measured with the collector's garbage; what
// it costs follows the document's structure, and every object, array,
// member and element begins at one of the bytes { [ , : outside strings.
// The constants are the worst shape measured with a margin; the test
// TestSchemaHeapBoundCoversEveryShape measures each shape against them.
const (
	// heapPerByteRead bounds what each byte costs as bytes: the bytes read
	// and the strings decoded from them (measured at 2.04 for one long
	// string).
	heapPerByteRead = 3
	// heapPerObject bounds one object ({): a map with its first group.
	heapPerObject = 384
	// heapPerArray bounds one array ([): its slice and its box.
	heapPerArray = 64
	// heapPerMember bounds one member or element (: or ,): a map slot or
	// slice cell with its share of the growth, and a boxed value.
	heapPerMember = 96
	// compileTreeFactor, compilePerByte and heapPerCompiledObject bound
	// what a compile holds for one document it loads: the library's own
	// trees of it (measured at up to 3.9 times the tree of the quick
	// parse), its decoder's buffers (about 12 bytes per byte of one long
	// string in all), and about 11 KiB for each object, every subschema
	// being compiled.
	compileTreeFactor     = 5
	compilePerByte        = 8
	heapPerCompiledObject = 16 << 10
)

// schemaHeapBound bounds the heap a schema of these bytes holds while it
// is parsed and walked: heapPerByteRead for each byte, and heapPerObject,
// heapPerArray or heapPerMember for each byte { [ , or : outside strings.
// The bytes need not be valid JSON: a string left open runs to the end.
func schemaHeapBound(data []byte) int64 {
	objects, arrays, members := structure(data)
	return treeHeapBound(int64(len(data)), objects, arrays, members)
}

// treeHeapBound is schemaHeapBound of a document of size bytes with these
// counts of structure.
func treeHeapBound(size, objects, arrays, members int64) int64 {
	return heapPerByteRead*size + heapPerObject*objects + heapPerArray*arrays + heapPerMember*members
}

// compileHeapBound bounds the heap a compile holds for one document of
// these bytes it loads.
func compileHeapBound(data []byte) int64 {
	size := int64(len(data))
	objects, arrays, members := structure(data)
	return compileTreeFactor*treeHeapBound(size, objects, arrays, members) + compilePerByte*size + heapPerCompiledObject*objects
}

// structure counts the bytes { [ and , or : of data outside strings.
func structure(data []byte) (objects, arrays, members int64) {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{':
			objects++
		case '[':
			arrays++
		case ',', ':':
			members++
		}
	}
	return objects, arrays, members
}

// errBuildStopped is what a charged loader answers once the build has
// stopped on an earlier schema's error: nothing of it is reported.
var errBuildStopped = errors.New("bundlebuild: the build stopped")

// chargedLoader is the loader of one compile in the check phase: each
// document it loads raises the compile's charge by compileHeapBound
// before the compiler parses it.
type chargedLoader struct {
	*diskLoader
	c *charge
}

// Load reads key and charges its compile, waiting, holding nothing, for
// room in the budget.
func (l chargedLoader) Load(key string) ([]byte, error) {
	data, err := l.diskLoader.Load(key)
	if err != nil {
		return nil, err
	}
	if !l.c.to(l.c.n + compileHeapBound(data)) {
		return nil, errBuildStopped
	}
	return data, nil
}

var _ offlineschema.Loader = chargedLoader{}
