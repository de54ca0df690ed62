package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newReportCmd() *cobra.Command {
	return &cobra.Command{Use: "report", Short: "(not yet implemented)"}
}
