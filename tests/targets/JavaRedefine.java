// JavaRedefine.java - test helper of tests/integration/java_frames: as a
// program, attaches to a JVM (pid) and loads this jar as an agent there;
// as that agent, redefines a class of the JVM with the bytes of a class
// file (the same bytes: the methods running on stacks become old
// versions, as after any RedefineClasses).
import com.sun.tools.attach.VirtualMachine;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.nio.file.Files;
import java.nio.file.Path;

public class JavaRedefine {
	// args: PID JAR CLASS CLASSFILE
	public static void main(String[] args) throws Exception {
		VirtualMachine vm = VirtualMachine.attach(args[0]);
		try {
			vm.loadAgent(args[1], args[2] + " " + args[3]);
		} finally {
			vm.detach();
		}
	}

	public static void agentmain(String arg, Instrumentation inst) throws Exception {
		String[] a = arg.split(" ", 2);
		Class<?> c = Class.forName(a[0], false, ClassLoader.getSystemClassLoader());
		inst.redefineClasses(new ClassDefinition(c, Files.readAllBytes(Path.of(a[1]))));
	}
}
