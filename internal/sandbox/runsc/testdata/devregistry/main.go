// Command devregistry builds the stand-in base images of package devimages
// and serves them from a registry on loopback until its stdin closes. It
// prints the registry's host:port as its first line of output.
//
// The runsc tests start it when they run with the race detector: building
// and pushing the images in a race-instrumented test binary takes about two
// minutes (gzip and tar in instrumented Go), against seconds here.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/codegenie/codegenie/internal/devimages"
)

func main() {
	sets, err := devimages.Sets(devimages.DefaultInputs(), devimages.DefaultCacheDir())
	if err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(1)
	}
	reg, err := devimages.ServeSets(context.Background(), "127.0.0.1:0", sets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(1)
	}
	fmt.Println(reg.Host)
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := reg.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(1)
	}
}
