package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newDataCmd() *cobra.Command {
	return &cobra.Command{Use: "data", Short: "(not yet implemented)"}
}
