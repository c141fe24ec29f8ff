package limit

// Number is what Default takes: the integer, float and duration types of
// option fields.
type Number interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float64
}

// Default sets *p to def when *p is not positive: an option left unset
// (zero) or nonsensical (negative) takes its default, and a positive one
// is kept as given.
func Default[T Number](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
