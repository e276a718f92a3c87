"""The ``oharness`` command line: a thin shell over the library."""
