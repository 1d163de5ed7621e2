// Time ScienceWorld's own step inside the JVM, with no py4j: what a step costs the simulator itself.
//
// Needs a JDK (javac); the env itself needs only a JRE. From the repository root:
//   JAR=$(python -c "from scienceworld.constants import JAR_PATH; print(JAR_PATH)")
//   javac -cp "$JAR" -d /tmp/jarstep plugins/envs/sciworld/bench/JarStep.java
//   (cd "$(dirname "$JAR")" && java -Xmx256m -XX:+UseSerialGC -cp "$JAR:/tmp/jarstep" JarStep 8 boil grow-plant)
// For each task (variation 0) it replays the gold path until the task is completed, through
// PythonInterface.step (what ScienceWorld's Python wrapper calls) and through AgentInterface.step
// (what the env calls), and prints the best CPU ms per step of the stepping thread over the reps.

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import scienceworld.runtime.AgentInterface;
import scienceworld.runtime.pythonapi.PythonInterface;

public class JarStep {
  public static void main(String[] args) {
    int reps = Integer.parseInt(args[0]);
    java.io.PrintStream out = System.out;
    System.setOut(new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));  // the JAR's debug prints
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    PythonInterface sim = new PythonInterface();
    out.println("| task | gold steps | PythonInterface.step CPU ms/step | AgentInterface.step CPU ms/step |");
    out.println("|---|---|---|---|");
    for (int t = 1; t < args.length; t++) {
      sim.load(args[t], 0, "", true);
      List<String> gold = sim.getGoldActionSequence();
      double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
      int steps = 0;
      for (int r = 0; r < reps; r++) {
        for (int mode = 0; mode < 2; mode++) {
          sim.load(args[t], 0, "", false);
          AgentInterface agent = sim.agentInterface().get();
          sim.step("look around");
          long cpu0 = threads.getCurrentThreadCpuTime();
          steps = 0;
          for (String action : gold) {
            steps++;
            boolean done;
            if (mode == 0) {
              sim.step(action);
              done = sim.getCompleted() || sim.getScore() < 0;
              sim.getNumMoves();
            } else {
              scala.Tuple3<String, Object, Object> result = agent.step(action);
              done = (Boolean) result._3() || (Double) result._2() < 0;
              agent.getCurIterations();
            }
            if (done) break;
          }
          best[mode] = Math.min(best[mode], (threads.getCurrentThreadCpuTime() - cpu0) / 1e6 / steps);
        }
      }
      out.printf("| %s | %d | %.2f | %.2f |%n", args[t], steps, best[0], best[1]);
    }
    System.exit(0);
  }
}
