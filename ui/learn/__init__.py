"""The "Learn" section: six lessons of SafeTab-P for trainers and newcomers (lessons,
content, the class and the presenter view, the lesson page layout)."""
