int fire(int n);

int main(int argc, char **argv)
{
	(void)argv;
	return fire(argc) == argc ? 0 : 1;
}
