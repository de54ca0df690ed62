package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is the program version, recorded in every run's config.json.
const version = "0.1.0"

// versionString is the version with the commit it was built from when the
// build recorded one, e.g. "0.1.0 (commit 1a2b3c4d, modified)".
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return version
	}
	return fmt.Sprintf("%s (commit %.12s%s)", version, rev, modified)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the build settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "simclr %s\n", versionString())
			fmt.Fprintf(out, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if info, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(out, "module: %s\n", info.Main.Path)
				var settings []string
				for _, s := range info.Settings {
					switch s.Key {
					case "CGO_ENABLED", "GOAMD64", "GOARM64", "vcs.time", "-tags", "-trimpath":
						settings = append(settings, s.Key+"="+s.Value)
					}
				}
				if len(settings) > 0 {
					fmt.Fprintf(out, "build: %s\n", strings.Join(settings, " "))
				}
			}
			return nil
		},
	}
}
