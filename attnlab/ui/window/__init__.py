"""The main window and what it is made of: menus, status bar, files, presentation mode, dialogs."""
