package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newEvalCmd() *cobra.Command {
	return &cobra.Command{Use: "eval", Short: "(not yet implemented)"}
}
