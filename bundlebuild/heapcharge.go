package bundlebuild

import (
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
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
	// heapPerTextNumber and heapPerTextNumberByte bound what one number
	// costs beyond the above where the parse keeps every number as text
	// before it rounds it (schemagraph's Parse with Float64 does so when
	// one number is one strconv rounds slowly, jsonnum.StrconvFast; docs/SPEC-DECISIONS.md JSON-3, JSON-8): a
	// boxed json.Number, its text, and the decoder's buffer of it.
	heapPerTextNumber     = 64
	heapPerTextNumberByte = 3
	// heapPerLongNumberByte bounds what each byte of a number of more than
	// longNumberBytes bytes costs beyond the above where encoding/json
	// rounds the numbers itself (no number kept as text): it rounds each
	// from a copy of its text, which the runtime keeps on the stack up to
	// 32 bytes and puts on the heap beyond. Measured on the quick check,
	// 4 MiB enums of 33- to 800-byte numbers: 2.4 to 3.5 bytes a byte
	// more than the above (docs/SPEC-DECISIONS.md JSON-14).
	heapPerLongNumberByte = 4
	longNumberBytes       = 32
)

// schemaHeapBound bounds the heap a schema of these bytes holds while it
// is parsed and walked: heapPerByteRead for each byte, and heapPerObject,
// heapPerArray or heapPerMember for each byte { [ , or : outside strings.
// The bytes need not be valid JSON: a string left open runs to the end.
func schemaHeapBound(data []byte) int64 {
	s := structure(data)
	return treeHeapBound(int64(len(data)), s)
}

// treeHeapBound is schemaHeapBound of a document of size bytes with this
// structure.
func treeHeapBound(size int64, s shape) int64 {
	return heapPerByteRead*size + heapPerObject*s.objects + heapPerArray*s.arrays + heapPerMember*s.members + numberHeap(s)
}

// numberHeap is what the numbers of a document of this structure add to
// its parse beyond their bytes: where its parse keeps them as text,
// heapPerTextNumber and heapPerTextNumberByte each (JSON-8); else, where
// encoding/json rounds them, heapPerLongNumberByte for each byte of the
// numbers of more than longNumberBytes bytes (JSON-14).
func numberHeap(s shape) int64 {
	if !s.numbersAsText {
		return heapPerLongNumberByte * s.longNumberBytes
	}
	return heapPerTextNumber*s.numbers + heapPerTextNumberByte*s.numberBytes
}

// compileHeapBound bounds the heap a compile holds for one document of
// these bytes it loads. What its numbers add (numberHeap) is charged
// once: the library's own trees do not keep them so.
func compileHeapBound(data []byte) int64 {
	size := int64(len(data))
	s := structure(data)
	numbers := numberHeap(s)
	s.numbersAsText, s.longNumberBytes = false, 0
	return compileTreeFactor*treeHeapBound(size, s) + numbers + compilePerByte*size + heapPerCompiledObject*s.objects
}

// shape is what structure counts of a document.
type shape struct {
	objects, arrays, members int64
	numbers, numberBytes     int64 // numbers outside strings, and their bytes
	longNumberBytes          int64 // the bytes of those of more than longNumberBytes bytes
	depth                    int   // the deepest nesting of objects and arrays
	numbersAsText            bool  // a number strconv rounds slowly: Parse keeps them all as text
}

// structure counts the bytes { [ and , or : of data outside strings, the
// numbers outside strings (a run of 0-9 + - . e E from a digit or -) and
// their bytes (apart, those of numbers of more than longNumberBytes), and
// how deep { and [ nest. It reads data with jsonnum's
// Scanner, as schemagraph's scan reads it to choose the parse's path
// (docs/SPEC-DECISIONS.md JSON-13).
func structure(data []byte) shape {
	var s shape
	depth := 0
	sc := jsonnum.NewScanner(data)
	for {
		kind, i, j := sc.Next()
		switch kind {
		case 0:
			return s
		case '{':
			s.objects++
			depth++
		case '[':
			s.arrays++
			depth++
		case '}', ']':
			depth--
		case ',', ':':
			s.members++
		case jsonnum.TokenNumber:
			s.numbers++
			s.numberBytes += int64(j - i)
			if j-i > longNumberBytes {
				s.longNumberBytes += int64(j - i)
			}
			if !s.numbersAsText && !jsonnum.StrconvFast(string(data[i:j])) {
				s.numbersAsText = true // the rule of schemagraph's scan
			}
		}
		s.depth = max(s.depth, depth)
	}
}

// overCompileLimits reports whether a schema of this shape is over a
// per-document compile limit (offlineschema.MaxSchemaNesting,
// MaxCompileObjects). For valid JSON the shape counts what the compile's
// own scan counts (every { and [ outside strings), so a document over one
// can never be compiled, nor vouched for by the quick check; the build
// then refuses it before it is charged its tree or parsed (BUILD-7), with
// the compile's own error (compileRefusalUnparsed): which limit, and how
// it is said, is the compile's to name, never this function's.
func overCompileLimits(s shape) bool {
	return s.depth > offlineschema.MaxSchemaNesting || s.objects > offlineschema.MaxCompileObjects
}

// compileRefusalUnparsed returns the error a compile of the schema key,
// whose bytes are data and whose shape is s, gives for a document over a
// per-document limit, or nil where the build is to go on and parse it.
// Only a document of valid JSON over a limit of its shape is refused
// here, and with what offlineschema.Compile says of it, which refuses it
// from a scan of its bytes, before the library parses it: the verdict is
// the compile's in every case (a number past the value model's caps
// before the nesting goes past 128, or anywhere in a document of 10,001
// objects, is what it names). A document that is not valid JSON goes on
// to the parse, which refuses it as the build always has ("is not a json
// schema object"), charged the bound of its tree like any other
// (docs/SPEC-DECISIONS.md BUILD-7, amended in review 117).
func compileRefusalUnparsed(key string, data []byte, s shape) *amp.Error {
	if !overCompileLimits(s) || !json.Valid(data) {
		return nil
	}
	_, err := offlineschema.Compile(unparsedSchema{key, data}, key, offlineschema.Options{})
	if !errors.Is(err, offlineschema.ErrInvalidSchema) {
		return nil // never so (a scan over a limit is refused); parsed then
	}
	return amp.AsError(err)
}

// unparsedSchema serves one schema document, and no other, to the compile
// of compileRefusalUnparsed.
type unparsedSchema struct {
	key  string
	data []byte
}

func (u unparsedSchema) Load(key string) ([]byte, error) {
	if key != u.key {
		return nil, fs.ErrNotExist
	}
	return u.data, nil
}

func (unparsedSchema) KeyForID(string) (string, bool) { return "", false }

// errBuildStopped is what a charged read answers once the build has
// stopped on an earlier schema's error, or once its item is preempted
// (byteBudget) and will run again: nothing of it is reported.
var errBuildStopped = errors.New("bundlebuild: the build stopped or the schema will be checked again")

// chargedLoader is the loader of one compile in the check phase: each
// document it loads raises the compile's charge by compileHeapBound
// before the compiler parses it.
type chargedLoader struct {
	*diskLoader
	c *charge
}

// Load charges the compile the bytes of key before it reads them, then,
// read, the bound of what the compile holds for them: each time waiting,
// holding what the compile holds, for room in the budget (byteBudget).
func (l chargedLoader) Load(key string) ([]byte, error) {
	size := l.dir.listedSize(l.files[key]) // what readListed may read
	if !l.c.to(l.c.n + size) {
		return nil, errBuildStopped
	}
	data, err := l.diskLoader.Load(key)
	if err != nil {
		return nil, err
	}
	if !l.c.to(l.c.n - size + compileHeapBound(data)) {
		return nil, errBuildStopped
	}
	return data, nil
}

var _ offlineschema.Loader = chargedLoader{}
