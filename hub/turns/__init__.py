"""An Anima's turn: the inbox row's life, the mailbox lanes, the runtime and the model loop."""
