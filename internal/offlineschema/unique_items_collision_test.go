package offlineschema

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// collidingArrays returns n distinct arrays of the same length that
// jsonschema v5.3.1's uniqueItems hash function cannot tell
// apart: each is p equal numbers, then two strings that split the text
// "x" + ("\x03x" x n) at a different "\x03". The hash writes a string as
// the byte 3 then its bytes, with no length, so ["x\x03x", "x"] and
// ["x", "x\x03x"] write the same bytes; every array lands in one bucket
// and each pair is compared with equals, which walks the p numbers first
// (each compared through fmt.Sprint and two big.Rat).
func collidingArrays(n, p int) string {
	items := make([]string, n)
	prefix := strings.TrimSuffix(strings.Repeat("1,", p), ",")
	for i := range items {
		a := "x" + strings.Repeat(`\u0003x`, i)
		b := "x" + strings.Repeat(`\u0003x`, n-i)
		items[i] = fmt.Sprintf(`[%s,"%s","%s"]`, prefix, a, b)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestUniqueItemsHashCollisionQuadratic: "uniqueItems": true is an
// ordinary keyword. For more than 20 items the library buckets items by
// a hash that is not injective, then compares every pair within a bucket
// with equals. A peer sends 300 distinct arrays, all in one bucket, each
// 300 equal numbers long, then two strings: about 800 KB of JSON, 90,000
// items, within every value limit; the library makes 45,000 deep
// comparisons of 300 numbers (about 10 s of CPU). The cost bound must
// charge the comparisons the library can make (items that share its hash
// × their size) and refuse the value (1001 validation_too_costly) before
// the library runs.
func TestUniqueItemsHashCollisionQuadratic(t *testing.T) {
	const name = "TestUniqueItemsHashCollisionQuadratic"
	text := collidingArrays(300, 300)
	if os.Getenv(victimChild) == name {
		v, err := ValueFromJSON([]byte(text))
		if err != nil {
			fmt.Println("value refused:", amp.SafeMessage(err))
			return
		}
		sch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","uniqueItems":true}`}), "in.schema.json", Options{})
		if err != nil {
			fmt.Println("compile refused:", amp.SafeMessage(err))
			return
		}
		start := time.Now()
		err = sch.Validate(v)
		fmt.Println("validate:", time.Since(start), err)
		var e *amp.Error
		if !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
			fmt.Println("FAIL: not refused as validation_too_costly")
			os.Exit(1)
		}
		return
	}
	out, timedOut := runVictimChild(t, name, 3*time.Second)
	if timedOut {
		t.Fatalf("validating a %d-byte array against {\"uniqueItems\":true} ran past %v (killed): pairwise comparison of hash-colliding items is not charged\nchild output:\n%s", len(text), victimLimit(3*time.Second), out)
	}
}

// TestUniqueItemsOrdinaryArraysStillValidate: the charge is of what the
// library can really compare, so ordinary arrays whose every-pair worst
// case is far over MaxValidationCost (1,000 distinct records, 16,384
// distinct numbers) are still validated, and a duplicate is still found.
func TestUniqueItemsOrdinaryArraysStillValidate(t *testing.T) {
	sch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","uniqueItems":true}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	records := make([]string, 1000)
	numbers := make([]string, DefaultMaxItems/16)
	for i := range records {
		records[i] = fmt.Sprintf(`{"id":%d,"name":"user-%d","tags":["a","b","c"],"score":%d.5,"ok":true}`, i, i, i)
	}
	for i := range numbers {
		numbers[i] = fmt.Sprint(i - 200)
	}
	for _, text := range []string{"[" + strings.Join(records, ",") + "]", "[" + strings.Join(numbers, ",") + "]"} {
		v, err := ValueFromJSON([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%.40s…: %v", text, err)
		}
	}
	v, err := ValueFromJSON([]byte("[" + strings.Join(records, ",") + "," + records[7] + "]"))
	if err != nil {
		t.Fatal(err)
	}
	var e *amp.Error
	if err := sch.Validate(v); !errors.As(err, &e) || e.Name != ErrSchemaViolation {
		t.Errorf("a duplicate record: %v, want schema_violation", err)
	}
}
