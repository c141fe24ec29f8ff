// Package strictjson checks JSON documents that are contracts (bridge
// documents, trust policy files): exactly one JSON value, no duplicate
// object member (encoding/json would silently keep the last), no string
// encoding/json would read with replacement (a byte that is not UTF-8, a
// lone surrogate escape: both read as U+FFFD), nesting within a bound,
// and decoding that refuses unknown members, including a member of a
// struct spelt in another case than its field's JSON name (encoding/json
// alone would match it case-insensitively). Its errors never
// quote the input beyond a member name, escaped and cut to 64 bytes.
package strictjson
