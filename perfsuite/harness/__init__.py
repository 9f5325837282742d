"""Child processes perfsuite supervises: fresh-process cold starts and tf.data service servers."""
