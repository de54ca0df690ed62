// Package fsutil holds the file-system checks the data set readers share.
package fsutil

import "os"

// IsFile reports whether path is a regular file (following symbolic links).
func IsFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// IsDir reports whether path is a folder (following symbolic links).
func IsDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
