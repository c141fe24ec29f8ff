package amp

import (
	"encoding/json"
	"testing"
)

func TestJSONValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"f6", `null`},
		{"1b0000018d746b3700", `1707055200000`},
		{"3bffffffffffffffff", `-18446744073709551616`},
		{"3b7fffffffffffffff", `-9223372036854775808`},
		{"3863", `-100`},
		{"4401020304", `{"bytes":"01020304"}`},
		{"6461626364", `"abcd"`},
		{"a2616101616280", `{"a":1,"b":[]}`},
		{"a2 01 61 61 20 f5", `{"map":[{"key":1,"value":"a"},{"key":-1,"value":true}]}`},
		{"c11a5f5e1000", `{"tag":1,"value":1600000000}`},
		{"c249010000000000000000", `{"tag":2,"value":{"bytes":"010000000000000000"}}`},
		{"d9c350a140f4", `{"tag":50000,"value":{"map":[{"key":{"bytes":""},"value":false}]}}`},
		{"f93e00", `1.5`},
		{"fb3fb999999999999a", `0.1`},
		{"f97e00", `{"float":"NaN"}`},
		{"f9fc00", `{"float":"-Infinity"}`},
		{"f7", `{"simple":23}`},
		{"f820", `{"simple":32}`},
		{"62c3a9", `"é"`},
	}
	for _, tt := range tests {
		got, err := JSONValue(hx(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid json %s", tt.in, got)
		}
	}
	if _, err := JSONValue(hx("9f01ff")); err == nil {
		t.Error("indefinite item rendered")
	}
}

func TestInspectVectors(t *testing.T) {
	vectors := loadVectors(t)
	in, err := Limits{}.Inspect(mustHex(t, vectors["a6-encrypted-authcrypt"].Output.Message))
	if err != nil {
		t.Fatal(err)
	}
	if in.TypName != "MESSAGE" || *in.Typ != 0x10 || in.Enc == nil || in.Body != nil || in.Enc.Ciphertext != vectors["a6-encrypted-authcrypt"].Output.Ciphertext {
		t.Fatalf("inspection %+v", in)
	}
	in, err = Limits{}.Inspect(mustHex(t, vectors["a4-ack"].Output.Message))
	if err != nil {
		t.Fatal(err)
	}
	if *in.ReplyTo != "0000018d746b37000000000000000001" || string(in.Body) != `{"ack_source":"recipient","ack_target":"did:web:example.com:agent:bob","received_at":1707055202500}` {
		t.Fatalf("inspection %+v %s", in, in.Body)
	}
	if _, err := (Limits{}).Inspect([]byte{0xa1, 0x61}); err == nil {
		t.Fatal("truncated message inspected")
	}
}
