package capability_test

import (
	"errors"
	"fmt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

func ExampleParseRange() {
	r, err := capability.ParseRange(">=1.2.0 <2.0.0")
	if err != nil {
		panic(err)
	}
	for _, s := range []string{"1.2.0", "1.9.3", "2.0.0", "1.5.0-rc.1"} {
		v, _ := capability.ParseVersion(s)
		fmt.Println(s, r.Contains(v))
	}
	_, err = capability.ParseRange("^1.2.0")
	fmt.Println(err)
	// Output:
	// 1.2.0 true
	// 1.9.3 true
	// 2.0.0 false
	// 1.5.0-rc.1 false
	// unsupported_range (4001): range uses an unsupported form: `^`
}

func ExampleNegotiate() {
	var provided []capability.Version
	for _, s := range []string{"2.0.0", "2.1.0"} {
		v, _ := capability.ParseVersion(s)
		provided = append(provided, v)
	}
	preferred, _ := capability.ParseVersion("2.2.0")
	acceptable := []capability.Version{provided[1], provided[0]}

	// RFC 004 A.3: 2.2.0 is not provided; the first acceptable one is.
	id, err := capability.Negotiate("org.agentries.code-review",
		capability.NegotiateHints{Preferred: preferred, Acceptable: acceptable}, provided)
	fmt.Println(id, err)

	// RFC 004 A.4: nothing in the range.
	r, _ := capability.ParseRange(">=3.0.0 <4.0.0")
	_, err = capability.Negotiate("org.agentries.code-review", capability.NegotiateHints{Range: r}, provided)
	fmt.Println(errors.Is(err, amp.CodeVersionMismatch))
	// Output:
	// org.agentries.code-review:2.1.0 <nil>
	// true
}

func ExampleDecodeInvoke() {
	// RFC 004 A.16: id together with negotiate.
	body, _ := amp.Marshal(map[string]any{
		"id":        "org.agentries.code-review:2.1.0",
		"negotiate": map[string]any{"preferred": "2.1.0"},
		"params":    map[string]any{"code": "x"},
	})
	_, err := capability.DecodeInvoke(body)
	fmt.Println(err)
	// Output:
	// identity_conflict (4001): id and negotiate must not both be present
}

func ExampleInNamespace() {
	for _, name := range []string{"org.example.x", "org.example.sub.x", "org.examples.x"} {
		fmt.Println(name, capability.InNamespace(name, "org.example"))
	}
	// Output:
	// org.example.x true
	// org.example.sub.x true
	// org.examples.x false
}

func ExampleResolveType() {
	known := []string{"org.agentries.code-review", "com.example.code-review", "org.agentries.translate"}
	name, _ := capability.ResolveType("translate", nil, known)
	fmt.Println(name)
	_, err := capability.ResolveType("code-review", nil, known)
	fmt.Println(err)
	name, _ = capability.ResolveType("code-review", map[string]string{"code-review": "org.agentries.code-review"}, known)
	fmt.Println(name)
	// Output:
	// org.agentries.translate
	// ambiguous_type (4001): legacy type matches several capabilities: com.example.code-review, org.agentries.code-review
	// org.agentries.code-review
}

func ExampleSortDescriptors() {
	var ds []capability.Descriptor
	for _, s := range []string{"org.b.x:1.0.0", "org.a.x:1.2.0", "org.a.x:1.10.0", "org.a.x:1.2.0-rc.1"} {
		id, _ := capability.ParseID(s)
		ds = append(ds, capability.Descriptor{Name: id.Name, Version: id.Version})
	}
	capability.SortDescriptors(ds, capability.OrderNewestFirst)
	for _, d := range ds {
		fmt.Println(d.ID())
	}
	// Output:
	// org.a.x:1.10.0
	// org.a.x:1.2.0
	// org.a.x:1.2.0-rc.1
	// org.b.x:1.0.0
}
