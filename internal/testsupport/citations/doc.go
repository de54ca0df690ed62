// Package citations holds the test that keeps the code's references to
// docs/definitions.md in step with that file: every comment citing
// "docs/definitions.md, section N" (optionally with the section's title in
// quotes) names a section that exists there under that number and title, and
// no comment cites a specification outside the repository.
package citations
