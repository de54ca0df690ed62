package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{Use: "version", Short: "(not yet implemented)"}
}
