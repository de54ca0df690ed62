package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "(not yet implemented)"}
}
