package limit_test

import (
	"fmt"
	"time"

	"github.com/ampbundle/ampbundle/internal/limit"
)

func ExampleDefault() {
	opts := struct {
		MaxBody int64
		Timeout time.Duration
	}{MaxBody: -1}
	limit.Default(&opts.MaxBody, 1<<20)
	limit.Default(&opts.Timeout, 30*time.Second)
	fmt.Println(opts.MaxBody, opts.Timeout)
	// Output: 1048576 30s
}
