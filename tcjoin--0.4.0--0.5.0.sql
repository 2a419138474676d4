-- tcjoin 0.4.0 to 0.5.0.  Nothing of 0.4.0 changes.
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.5.0'" to load this file. \quit
