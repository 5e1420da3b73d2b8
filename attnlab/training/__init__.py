"""Training the classroom models: the generated corpus, batching, the training loop and evaluation."""
