package main

import (
	"fmt"
	"io"
	"runtime"
)

// version is set at link time: -ldflags "-X main.version=...".
var version = "dev"

// protocolVersion is the RocketMQ release whose wire protocol and on-disk
// formats rmq follows.
const protocolVersion = "4.9.8"

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "rmq %s (RocketMQ %s compatible, %s %s/%s)\n", version, protocolVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
