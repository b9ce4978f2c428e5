"""Front doors into other people's tools (inspect_ai).  Nothing in the package depends
on these modules: each one only calls the library."""
