// Package strictjson checks JSON documents that are contracts (bridge
// documents, trust policy files): exactly one JSON value, no duplicate
// object member (encoding/json would silently keep the last), nesting
// within a bound, and decoding that refuses unknown members. Its errors
// never quote the input beyond a member name, escaped.
package strictjson
